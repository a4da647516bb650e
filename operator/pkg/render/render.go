// Package render turns a Gateway, its class and its ContourDeployment
// profile into the objects of its fleet. It is pure: no client, no clock,
// no randomness (certificates are issued elsewhere), so that what the
// operator applies can be reviewed as golden YAML.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/fleet"
	"isobar.dev/api/release"
	"isobar.dev/api/v1alpha1"
)

// Default images: the controller of the operator's own release, and a
// released Envoy; the operator's flags override them.
var DefaultControllerImage = release.Image(release.Registry, "isobar-controller")

const DefaultEnvoyImage = "docker.io/envoyproxy/envoy:distroless-v1.40.0"

// Paths inside the fleet's pods, under v1alpha1.ReservedMountPrefix.
const (
	CertsDir          = fleet.CertsDir
	BootstrapDir      = v1alpha1.ReservedMountPrefix + "/bootstrap"
	ConfigDir         = v1alpha1.ReservedMountPrefix + "/config"
	RuntimeConfigFile = "runtime-settings.json"
)

// Input is everything a fleet is rendered from.
type Input struct {
	Gateway *gatewayv1.Gateway
	// Listeners are the listeners whose ports the Envoy Service publishes:
	// the Gateway's own and its allowed ListenerSets'
	// (listenerset.Listeners); nil means the Gateway's own.
	Listeners []gatewayv1.Listener
	// ControllerName is the class's controllerName, which the per-Gateway
	// controller writes route status under.
	ControllerName string
	Spec           v1alpha1.ContourDeploymentSpec
	Images         Images
	// Static renders a static fleet (the static mode of Contour's Gateway API design): Gateway
	// stands for the ContourDeployment (its name and namespace, and the
	// listeners of the Gateway the controller will serve), and the
	// controller runs in controllerName mode for ControllerName.
	Static bool
	// NodePortRange is the API server's --service-node-port-range, which a
	// profile's node ports must lie in; the zero range is not checked.
	NodePortRange PortRange
	// CertificateRefs are the Secrets and ConfigMaps the controller may
	// read (certrefs.Of the Gateway it serves).
	CertificateRefs []certrefs.Ref
	// Autoscaled names the Deployments a HorizontalPodAutoscaler scales:
	// their replicas are left out, so that applying never undoes the
	// autoscaler.
	Autoscaled map[string]bool
}

// PortRange is an inclusive range of ports.
type PortRange struct{ Min, Max int32 }

func (p PortRange) String() string { return fmt.Sprintf("%d-%d", p.Min, p.Max) }

// DefaultNodePortRange is the API server's default node port range.
var DefaultNodePortRange = PortRange{30000, 32767}

// ParsePortRange reads "MIN-MAX".
func ParsePortRange(s string) (PortRange, error) {
	var p PortRange
	if _, err := fmt.Sscanf(s, "%d-%d", &p.Min, &p.Max); err != nil || p.Min < 1 || p.Max > 65535 || p.Min > p.Max {
		return PortRange{}, fmt.Errorf("%q is not a port range such as 30000-32767", s)
	}
	return p, nil
}

// Images are the container images of a fleet.
type Images struct {
	Controller, Envoy string
}

// Fleet is a rendered fleet: the namespaced objects (owned by the Gateway),
// the cluster-scoped ones and the certificate grants (removed through the
// Gateway's finalizer).
type Fleet struct {
	Namespaced    []client.Object
	ClusterScoped []client.Object
	// Grants are the Roles and RoleBindings, in the namespaces of the
	// Gateway's certificates, that let the controller read them; an owner
	// reference cannot reach across namespaces, so LabelCertificateGrant
	// finds them.
	Grants []client.Object
	// Names of the parts other code refers to.
	Names Names
	// SecretLabels and SecretAnnotations are the metadata of the
	// certificate Secrets, which are issued rather than rendered: the
	// fleet's labels and the Gateway's infrastructure metadata.
	SecretLabels, SecretAnnotations map[string]string
}

// Names of a fleet's objects.
type Names struct {
	Base                            string
	Controller, Envoy               string // Deployments / DaemonSet and their Services
	ControllerCerts, EnvoyCerts     string // Secrets
	CA                              string // the CA Secret (with its key)
	ControllerConfig                string // ConfigMap of runtime settings
	ClusterRole                     string
	ControllerServiceDNS            string
	ControllerAccount, EnvoyAccount string
}

// NamesOf names the fleet of a Gateway of a class.
func NamesOf(gw *gatewayv1.Gateway) Names {
	class := string(gw.Spec.GatewayClassName)
	n := Names{
		Base:       fleet.Base(gw.Name, class),
		Controller: fleet.Name(gw.Name, class, fleet.Controller),
		Envoy:      fleet.Name(gw.Name, class, fleet.Envoy),
	}
	n.ControllerCerts = fleet.Shorten(n.Controller + "-certs")
	n.EnvoyCerts = fleet.Shorten(n.Envoy + "-certs")
	n.CA = fleet.Shorten(n.Base + "-xds-ca")
	n.ControllerConfig = fleet.Shorten(n.Controller + "-config")
	n.ControllerAccount, n.EnvoyAccount = n.Controller, n.Envoy
	// Cluster-scoped: the namespace makes it unique.
	n.ClusterRole = fleet.Shorten("isobar-" + gw.Namespace + "-" + n.Controller)
	n.ControllerServiceDNS = n.Controller + "." + gw.Namespace + ".svc"
	return n
}

// Render renders a fleet. An error means the input cannot be rendered (the
// message names the field); nothing is half-rendered.
func Render(in Input) (*Fleet, error) {
	gw := in.Gateway
	if err := validate(in.Spec, in.NodePortRange); err != nil {
		return nil, err
	}
	if in.Images.Controller == "" {
		in.Images.Controller = DefaultControllerImage
	}
	if in.Images.Envoy == "" {
		in.Images.Envoy = DefaultEnvoyImage
	}
	f := &Fleet{Names: NamesOf(gw)}
	r := renderer{in: in, names: f.Names}
	f.SecretLabels, f.SecretAnnotations = r.labels(fleet.Controller), r.annotations()
	runtime, err := json.Marshal(in.Spec.RuntimeSettings)
	if err != nil {
		return nil, fmt.Errorf("encoding runtimeSettings: %w", err)
	}
	sum := sha256.Sum256(runtime)
	r.configHash = hex.EncodeToString(sum[:8])

	envoyWorkload, err := r.envoyWorkload()
	if err != nil {
		return nil, err
	}
	envoyService, err := r.envoyService()
	if err != nil {
		return nil, err
	}
	var services []client.Object
	// A Service needs a port; until a Gateway has a listener to serve
	// there is none.
	if len(envoyService.Spec.Ports) > 0 {
		services = append(services, envoyService)
	}
	role, binding := r.controllerRole()
	f.Namespaced = append(f.Namespaced,
		r.serviceAccount(f.Names.ControllerAccount, fleet.Controller),
		r.serviceAccount(f.Names.EnvoyAccount, fleet.Envoy),
		role, binding,
		r.controllerConfig(runtime),
		r.controllerDeployment(),
		r.controllerService(),
		envoyWorkload,
	)
	f.Namespaced = append(f.Namespaced, services...)
	if pdb := r.podDisruptionBudget(); pdb != nil {
		f.Namespaced = append(f.Namespaced, pdb)
	}
	cr, crb := r.controllerClusterRole()
	f.ClusterScoped = append(f.ClusterScoped, cr, crb)
	f.Grants = r.certificateGrants()
	return f, nil
}

// Sum identifies a rendering: two fleets with the same sum are the same
// objects.
func Sum(f *Fleet) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, o := range slices.Concat(f.Namespaced, f.ClusterScoped, f.Grants) {
		// Objects of the renderer's own types always encode.
		_ = enc.Encode(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LabelGatewayNamespace on cluster-scoped objects names their Gateway's
// namespace, which the Gateway-name label alone cannot.
const LabelGatewayNamespace = "isobar.dev/gateway-namespace"

// Check renders a fleet from spec for a sample Gateway: a profile the
// operator could not use is refused where it is referenced (class,
// profile status) rather than on every Gateway.
func Check(spec v1alpha1.ContourDeploymentSpec, nodePorts PortRange) error {
	sample := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "check", Namespace: "check"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "check"}}
	_, err := Render(Input{Gateway: sample, Spec: spec, NodePortRange: nodePorts})
	return err
}

// renderer carries the input through the object builders.
type renderer struct {
	in         Input
	names      Names
	configHash string
}

// labels are the fleet labels of a component, with the Gateway's
// spec.infrastructure labels.
func (r *renderer) labels(c fleet.Component) map[string]string {
	out := map[string]string{}
	if inf := r.in.Gateway.Spec.Infrastructure; inf != nil {
		for k, v := range inf.Labels {
			out[string(k)] = string(v)
		}
	}
	maps.Copy(out, r.selector(c))
	out[fleet.LabelManagedBy] = fleet.ManagedBy
	return out
}

// selector selects a component's pods; it never changes for a fleet, as a
// workload's selector cannot.
func (r *renderer) selector(c fleet.Component) map[string]string {
	return map[string]string{
		fleet.LabelGatewayName: fleet.Shorten(r.in.Gateway.Name),
		fleet.LabelComponent:   string(c),
	}
}

// annotations are the Gateway's spec.infrastructure annotations.
func (r *renderer) annotations() map[string]string {
	inf := r.in.Gateway.Spec.Infrastructure
	if inf == nil || len(inf.Annotations) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range inf.Annotations {
		out[string(k)] = string(v)
	}
	return out
}

func (r *renderer) meta(name string, c fleet.Component) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.in.Gateway.Namespace, Labels: r.labels(c), Annotations: r.annotations()}
}

func (r *renderer) serviceAccount(name string, c fleet.Component) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: r.meta(name, c),
		// Envoy never talks to the API server; the controller mounts its
		// token explicitly.
		AutomountServiceAccountToken: ptr(false),
	}
}

func (r *renderer) controllerConfig(runtime []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: r.meta(r.names.ControllerConfig, fleet.Controller),
		Data:       map[string]string{RuntimeConfigFile: string(runtime)},
	}
}

func ptr[T any](v T) *T { return &v }
