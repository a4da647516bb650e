package fleet

import "isobar.dev/api/v1alpha1"

// The xDS certificates. The operator writes each fleet component's
// certificate, key and CA bundle into a kubernetes.io/tls Secret under
// these keys and mounts it at CertsDir, so the keys are also the file names
// the controller's xDS server and Envoy's bootstrap read there.
const (
	CertsDir = v1alpha1.ReservedMountPrefix + "/certs"
	CertKey  = "tls.crt"
	KeyKey   = "tls.key"
	// CAKey is a bundle: while a fleet's CA is replaced it holds the old
	// CA too.
	CAKey = "ca.crt"
)
