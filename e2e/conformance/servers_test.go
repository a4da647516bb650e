package conformance

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/operator/pkg/certs"
)

// serverWorkload is one of our test servers (image rig.AuthzImage,
// rig.RateLimitImage or rig.JWKSImage) as a Pod of a Deployment behind a Service
// of its name, listening on port ($PORT) under the port's name, with env.
func serverWorkload(ns, name, image, portName string, port int32, env ...corev1.EnvVar) []client.Object {
	labels := map[string]string{"app": name}
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Name: portName, Port: port}},
		}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: name, Image: image + ":test",
				Env:   append([]corev1.EnvVar{{Name: "PORT", Value: strconv.Itoa(int(port))}}, env...),
				Ports: []corev1.ContainerPort{{Name: portName, ContainerPort: port}},
			}}}},
		}},
	}
}

// podlessService is a Service whose selector no Pod has: a server that is
// down.
func podlessService(ns, name, portName string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "nobody"}, Ports: []corev1.ServicePort{{Name: portName, Port: port}},
	}}
}

// tlsGateway is a namespace with a Gateway of Contour's listeners
// (ingress-http, and ingress-https with a certificate for *.example.com
// in Secret example-tls) and the IngressClass class of its HTTPProxies.
func tlsGateway(t *testing.T, ns, class string) []client.Object {
	t.Helper()
	ca, caKey, err := certs.NewCA(ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := certs.Issue(ca, caKey, []string{"*.example.com"}, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}},
		ingressClassFor(class, ns),
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners: []gatewayv1.Listener{
				{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
				{Name: "ingress-https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, TLS: &gatewayv1.ListenerTLSConfig{
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "example-tls"}}}},
			},
		}},
	}
}
