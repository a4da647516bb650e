package xds

import (
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/accesslog"
)

// udpAccessLogText is Envoy's recommended line for UDP proxy sessions: the
// HTTP and TCP operators of the default line are all "-" there.
const udpAccessLogText = "[%START_TIME%] %DYNAMIC_METADATA(udp.proxy:cluster_name)% " +
	"%DYNAMIC_METADATA(udp.proxy:bytes_sent)% %DYNAMIC_METADATA(udp.proxy:bytes_received)% " +
	"%DYNAMIC_METADATA(udp.proxy:errors_sent)% %DYNAMIC_METADATA(udp.proxy:errors_received)% " +
	"%DYNAMIC_METADATA(udp.proxy:datagrams_sent)% %DYNAMIC_METADATA(udp.proxy:datagrams_received)%\n"

// accessLogs are the access loggers of an HTTP connection manager or TCP
// proxy (udp false) or of a UDP proxy: one, to Envoy's standard output, in
// the profile's format; none when the profile disables them.
func accessLogs(s Settings, udp bool) []*accesslogv3.AccessLog {
	out := &streamv3.StdoutAccessLog{}
	switch s.AccessLog {
	case "Disabled":
		return nil
	case "JSON":
		fields := s.AccessLogJSON
		if len(fields) == 0 {
			fields = accesslog.DefaultJSONFields
		}
		js := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for _, f := range fields {
			k, v, _ := strings.Cut(f, "=")
			js.Fields[k] = structpb.NewStringValue(v)
		}
		out.AccessLogFormat = &streamv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: js},
		}}
	default:
		text := s.AccessLogText
		if text == "" && udp {
			text = udpAccessLogText
		}
		if text != "" {
			out.AccessLogFormat = &streamv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
				Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
					Specifier: &corev3.DataSource_InlineString{InlineString: text},
				}},
			}}
		}
	}
	return []*accesslogv3.AccessLog{{
		Name:       "envoy.access_loggers.stdout",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(out)},
	}}
}

// httpAccessLogs are an HTTP connection manager's access loggers: those
// of accessLogs, logging only the requests of the profile's level.
func httpAccessLogs(s Settings) []*accesslogv3.AccessLog {
	logs := accessLogs(s, false)
	min := map[string]uint32{"Error": 300, "Critical": 500}[s.AccessLogLevel]
	for _, l := range logs {
		if min > 0 {
			l.Filter = errorsFrom(min)
		}
	}
	return logs
}

// errorsFrom passes what Envoy answered with a status of min or more, or
// what failed on its side (any response flag), as Contour's levels do.
func errorsFrom(min uint32) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_OrFilter{OrFilter: &accesslogv3.OrFilter{
		Filters: []*accesslogv3.AccessLogFilter{{
			FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
				Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_GE,
					Value: &corev3.RuntimeUInt32{DefaultValue: min, RuntimeKey: "isobar.accesslog.filter.status_code"}},
			}},
		}, {
			FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{}},
		}},
	}}}
}

// serverHeader is Envoy's server_header_transformation for a profile's
// serverHeader.
func serverHeader(s Settings) hcmv3.HttpConnectionManager_ServerHeaderTransformation {
	switch s.ServerHeader {
	case "AppendIfAbsent":
		return hcmv3.HttpConnectionManager_APPEND_IF_ABSENT
	case "PassThrough":
		return hcmv3.HttpConnectionManager_PASS_THROUGH
	default:
		return hcmv3.HttpConnectionManager_OVERWRITE
	}
}
