package dataplane

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// references are the names of endpoints, routes and secrets that clusters
// and listeners ask for over ADS: an EDS cluster's service name (or its
// own), an HTTP connection manager's RDS route configuration, and every
// SDS secret whose config source is ADS, wherever it sits (transport
// sockets of filter chains and clusters, validation contexts).
func references(clusters, listeners map[string]proto.Message) map[string]map[string]bool {
	out := map[string]map[string]bool{resourcev3.EndpointType: {}, resourcev3.RouteType: {}, resourcev3.SecretType: {}}
	for name, m := range clusters {
		c := m.(*clusterv3.Cluster)
		if c.GetType() == clusterv3.Cluster_EDS {
			n := c.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = name
			}
			out[resourcev3.EndpointType][n] = true
		}
		walk(c.ProtoReflect(), out)
	}
	for _, m := range listeners {
		walk(m.ProtoReflect(), out)
	}
	return out
}

func walk(m protoreflect.Message, out map[string]map[string]bool) {
	switch v := m.Interface().(type) {
	case *anypb.Any:
		if inner, err := v.UnmarshalNew(); err == nil {
			walk(inner.ProtoReflect(), out)
		}
		return
	case *hcmv3.Rds:
		if v.GetConfigSource().GetAds() != nil {
			out[resourcev3.RouteType][v.GetRouteConfigName()] = true
		}
	case *tlsv3.SdsSecretConfig:
		if v.GetSdsConfig().GetAds() != nil {
			out[resourcev3.SecretType][v.GetName()] = true
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := val.List()
			for i := 0; i < l.Len(); i++ {
				walk(l.Get(i).Message(), out)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			val.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				walk(v.Message(), out)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			walk(val.Message(), out)
		}
		return true
	})
}

func statusOf(err error) *statuspb.Status {
	return &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
}
