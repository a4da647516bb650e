// Package kubeconfig finds the API server both binaries talk to, the way
// kubectl does: --kubeconfig, else $KUBECONFIG, else the Pod's service
// account when in a cluster, else ~/.kube/config. controller-runtime's
// own lookup registers its flag on the process's global flag set, which
// the binaries do not parse, and logs a stack trace before it fails; this
// one says in one line what it tried.
package kubeconfig

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// Help is what the --kubeconfig flag says.
const Help = "the kubeconfig file of the cluster (default: $KUBECONFIG, else the Pod's service account in a cluster, else ~/.kube/config)"

// Bind registers --kubeconfig on fs and returns where its value goes.
func Bind(fs *flag.FlagSet) *string {
	return fs.String("kubeconfig", "", Help)
}

// Load is the configuration of the API server: from the file at path
// when it is set, else as kubectl finds it, in-cluster before
// ~/.kube/config.
func Load(path string) (*rest.Config, error) {
	cfg, err := load(path)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		// No client-side rate limit unless the kubeconfig sets one, as
		// controller-runtime has it: the API server's priority and
		// fairness limits us, and client-go's default of 5 requests a
		// second would hold a Gateway's route status writes for minutes.
		cfg.QPS = -1
	}
	return cfg, nil
}

func load(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case path != "":
		rules.ExplicitPath = path
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "":
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
		// The home directory as it is now, not when client-go started.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errors.New("no cluster to talk to: not in a Pod, and no kubeconfig (set --kubeconfig or $KUBECONFIG, or create ~/.kube/config)")
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}
