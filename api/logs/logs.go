// Package logs builds the structured logger both binaries use: zap, behind
// logr through zapr, so controller-runtime and our code log alike. The
// operator passes a ContourDeployment's log level to the controller as a
// flag; this package is where the level names mean the same to both.
package logs

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Formats a logger can write.
const (
	JSON    = "json"
	Console = "console"
)

// New returns a logger at level (debug, info, warn or error) in format
// (json or console) on standard error.
func New(level, format string) (logr.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil || lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return logr.Discard(), fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	var cfg zap.Config
	switch format {
	case JSON:
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "ts"
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	case Console:
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
	default:
		return logr.Discard(), fmt.Errorf("log format %q: want json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	// Sampling drops repeated lines under load; a reconcile loop that logs
	// the same error for every object must still show every object.
	cfg.Sampling = nil
	z, err := cfg.Build()
	if err != nil {
		return logr.Discard(), fmt.Errorf("building logger: %w", err)
	}
	return zapr.NewLogger(z), nil
}
