package xdsserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// ServerTLS returns the xDS server's TLS configuration: TLS 1.3, a client
// certificate signed by the fleet's CA required of every Envoy. The files
// are read again when they change on disk (the operator rotates them in the
// mounted Secret), so rotation needs no restart; a handshake during a
// half-written rotation keeps the previous certificates.
func ServerTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	r := &reloader{certFile: certFile, keyFile: keyFile, caFile: caFile}
	if _, err := r.config(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.config()
		},
	}, nil
}

type reloader struct {
	certFile, keyFile, caFile string

	mu      sync.Mutex
	stamp   string
	current *tls.Config
}

func (r *reloader) config() (*tls.Config, error) {
	stamp, err := r.modTimes()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && stamp == r.stamp && r.current != nil {
		return r.current, nil
	}
	cfg, loadErr := r.load()
	if loadErr != nil {
		if r.current != nil {
			return r.current, nil
		}
		return nil, loadErr
	}
	r.stamp, r.current = stamp, cfg
	return cfg, nil
}

func (r *reloader) modTimes() (string, error) {
	var s string
	for _, f := range []string{r.certFile, r.keyFile, r.caFile} {
		info, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += info.ModTime().Format(time.RFC3339Nano) + fmt.Sprint(info.Size())
	}
	return s, nil
}

func (r *reloader) load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the xDS server certificate: %w", err)
	}
	caPEM, err := os.ReadFile(r.caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the fleet CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", r.caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}
