package httpproxy

import (
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
)

// tcpProxy is where a root's tcpproxy sends the connections of its TLS
// virtual host, terminated or passed through: its services, weighted
// (equally when no weight is given). A service that does not resolve is
// an error, as in Contour.
func (w *walk) tcpProxy(root *contourv1.HTTPProxy) (*ir.Destination, *problem) {
	tp := root.Spec.TCPProxy
	if f := refuseTCPProxy(tp); f != "" {
		return nil, refused(contourv1.ConditionTypeTCPProxyError, "NotSupported", fmt.Sprintf("tcpproxy.%s is not supported yet", f))
	}
	if len(tp.Services) == 0 {
		return nil, refused(contourv1.ConditionTypeTCPProxyError, "NothingDefined", "either services or inclusion must be specified")
	}
	weighted := false
	for _, s := range tp.Services {
		weighted = weighted || s.Weight > 0
	}
	refs := make([]gatewayv1.BackendRef, 0, len(tp.Services))
	for j := range tp.Services {
		s := &tp.Services[j]
		if f := refuseTCPService(s); f != "" {
			return nil, refused(contourv1.ConditionTypeTCPProxyError, "NotSupported", fmt.Sprintf("tcpproxy.services[%d].%s is not supported yet", j, f))
		}
		if s.Port < 1 || s.Port > 65535 {
			return nil, refused(contourv1.ConditionTypeTCPProxyError, "ServicePortInvalid", fmt.Sprintf("service %q: port must be in the range 1-65535", s.Name))
		}
		weight := int32(1)
		if weighted {
			weight = int32(min(s.Weight, 1000000))
		}
		refs = append(refs, gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(s.Name), Port: ptr(gatewayv1.PortNumber(s.Port))},
			Weight:                 &weight,
		})
	}
	b := routerule.StreamBackends(w.e, w.names, "HTTPProxy", root.Namespace, root.Generation, refs)
	if c := b.Resolved.Get(gatewayv1.RouteConditionResolvedRefs); c != nil {
		return nil, refused(contourv1.ConditionTypeTCPProxyError, "ServiceUnresolvedReference", "Spec.TCPProxy unresolved service reference: "+c.Message)
	}
	w.tree.Clusters = append(w.tree.Clusters, b.Clusters...)
	return b.Destination, nil
}
