package serve

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"isobar.dev/api/certrefs"
	"isobar.dev/controller/pkg/resources"
)

// certificateWait bounds how long a pass waits for a newly referenced
// Secret or ConfigMap: a reference the operator has not yet granted read
// access to must not hold back every other change. Its watch keeps
// retrying and brings the object when it can.
const certificateWait = 10 * time.Second

// readCertificates puts into res the Secrets and ConfigMaps the served
// Gateway can use, and no others: those certrefs names, which are those the
// operator lets the controller read.
func (r *reconciler) readCertificates(ctx context.Context, res *resources.Resources, served types.NamespacedName) {
	var refs []certrefs.Ref
	for _, gw := range res.Gateways {
		if gw.Namespace != served.Namespace || gw.Name != served.Name {
			continue
		}
		refs = certrefs.Of(res.CertificateInput(gw, r.opts.ControllerName, r.opts.Runtime.HTTPProxyOrDefault().FallbackCertificate))
	}
	for ref, err := range r.certificates.Want(refs, certificateWait) {
		// The translator reports the reference as not found; the log
		// says why, such as a watch RBAC refuses.
		ctrl.LoggerFrom(ctx).Info("a referenced object cannot be read yet", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name, "reason", err.Error())
	}
	res.Secrets, res.ConfigMaps = r.certificates.Secrets(), r.certificates.ConfigMaps()
}
