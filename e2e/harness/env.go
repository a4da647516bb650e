// Package harness runs the parts of a cluster that Isobar's tests need, for
// real: a kube-apiserver and etcd (through controller-runtime's envtest) with
// the Gateway API CRDs and ours installed, optionally a
// kube-controller-manager so that Deployments get Pods and ownerReferences
// are garbage collected, and Isobar's own binaries as processes.
//
// A test package starts one Env in TestMain and shares it: starting the API
// server takes seconds, and tests isolate themselves with namespaces.
package harness

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
)

// Options choose what Start runs.
type Options struct {
	// Channel is the Gateway API release channel whose CRDs are installed:
	// "standard" or "experimental" (a superset). The default is
	// $ISOBAR_GATEWAY_API_CHANNEL, else "standard", what the quickstart
	// installs; `make test` runs the e2e tests on both.
	Channel string
	// ControllerManager also runs kube-controller-manager.
	ControllerManager bool
	// Omit names Gateway API or config/crd CRDs (such as
	// "udproutes.gateway.networking.k8s.io") to leave out, as a cluster
	// that installed only some of them; InstallOmitted adds them later.
	Omit []string
	// ServiceCIDR is the range Services' cluster IPs come from (envtest's
	// default is 10.0.0.0/24). A loopback range makes every cluster IP an
	// address this machine can listen on and dial.
	ServiceCIDR string
}

// ChannelVariable names the environment variable that chooses the default
// Gateway API channel.
const ChannelVariable = "ISOBAR_GATEWAY_API_CHANNEL"

// Env is a running test cluster.
type Env struct {
	// Config authenticates as a cluster administrator.
	Config *rest.Config
	// Client is a controller-runtime client with the operator's scheme.
	Client client.Client
	// Dir is a scratch directory removed by Stop.
	Dir string
	// Channel is the Gateway API channel whose CRDs are installed.
	Channel string

	env     *envtest.Environment
	kcm     *Process
	omitted []*apiextensionsv1.CustomResourceDefinition

	buildOnce sync.Once
	binDir    string
	buildErr  error
}

// Start starts the API server and installs the CRDs; Stop undoes it.
func Start(opts Options) (_ *Env, err error) {
	if opts.Channel == "" {
		opts.Channel = cmp.Or(os.Getenv(ChannelVariable), "standard")
	}
	assets, err := BinaryAssets()
	if err != nil {
		return nil, err
	}
	gwDir, err := GatewayAPICRDs(opts.Channel)
	if err != nil {
		return nil, err
	}
	gwCRDs, err := ReadCRDs(gwDir)
	if err != nil {
		return nil, err
	}
	ours, err := IsobarCRDs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "isobar-e2e-")
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, Channel: opts.Channel}
	omit := func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		if slices.Contains(opts.Omit, crd.Name) {
			e.omitted = append(e.omitted, crd)
			return true
		}
		return false
	}
	gwCRDs = slices.DeleteFunc(gwCRDs, omit)
	ours = slices.DeleteFunc(ours, omit)
	if len(e.omitted) != len(opts.Omit) {
		return nil, fmt.Errorf("omitting CRDs %v: only %d of them are in the %s channel or config/crd", opts.Omit, len(e.omitted), opts.Channel)
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	tethered, err := Tether(assets, filepath.Join(dir, "control-plane"), "etcd", "kube-apiserver")
	if err != nil {
		return nil, err
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory:    tethered,
		CRDs:                     append(gwCRDs, ours...),
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// The API server advertises the address it is reached on. Without
	// this it looks for the default route's interface, and the network
	// namespace Main gives an ordinary user's tests has no route at all.
	e.env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1")
	if opts.ServiceCIDR != "" {
		e.env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", opts.ServiceCIDR)
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	if opts.ControllerManager {
		if err := e.startControllerManager(assets); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// InstallOmitted installs the CRDs Options.Omit left out, and waits until
// they are served.
func (e *Env) InstallOmitted() error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: e.omitted})
	return err
}

// Scheme knows every type the tests read or write: Kubernetes' own, CRDs,
// every served Gateway API version, and Isobar's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		gatewayv1.Install,
		gatewayv1beta1.Install,
		gatewayv1alpha2.Install,
		gatewayv1alpha3.Install,
		isobarv1alpha1.AddToScheme,
		contourv1.AddToScheme,
		contourv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// Kubeconfig writes a kubeconfig for a cluster administrator and returns its
// path, for processes under test.
func (e *Env) Kubeconfig(name string) (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, name+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// startControllerManager runs kube-controller-manager without the
// service-account token controller (envtest's API server has no signing key
// for it) and without a secure port, which tests do not need.
func (e *Env) startControllerManager(assets string) error {
	kubeconfig, err := e.Kubeconfig("kube-controller-manager")
	if err != nil {
		return err
	}
	e.kcm, err = StartProcess(e.Dir, filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--controllers=*,-serviceaccount-token",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--leader-elect=false",
	)
	if err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	return nil
}

// Stop stops everything Start started and removes the scratch directory.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil {
		if _, err := e.kcm.Stop(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if e.env != nil {
		if err := e.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
	}
	if err := os.RemoveAll(e.Dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("stopping test environment: %v", errs)
	}
	return nil
}

// Context is a context for a test step, bounded so a hung API call fails the
// test rather than the whole run.
func Context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}
