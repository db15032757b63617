package analysis

import (
	"regexp"
	"strings"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// A signal extractor for proxy access logs: Envoy (and Istio, Contour,
// Gloo, Ambassador, which log through it) writes beside each request's
// status a response flag that says why the proxy answered as it did. The
// flags are a documented vocabulary (Envoy's access log RESPONSE_FLAGS);
// each is an effect row of the cause-to-effect table: the mechanism and
// the category it belongs to. A 503 alone says nothing; "503 UC" says the
// upstream closed a connection the proxy reused.

// flagRow is one response flag: the category its mechanism belongs to
// (catUnknown: it says where, not why) and what it means.
type flagRow struct {
	cat  investigationv1.RootCauseCategory
	what string
}

var responseFlags = map[string]flagRow{
	"UH":    {catUnknown, "no healthy upstream host in the upstream cluster (its hosts down, or all ejected by outlier detection)"},
	"UF":    {catDependency, "the proxy could not connect to the upstream"},
	"UO":    {catResource, "upstream overflow: the cluster's circuit breaker (connection, request or pending limit) is full"},
	"NR":    {catConfig, "no route is configured for the request"},
	"NC":    {catConfig, "the route names an upstream cluster that does not exist"},
	"URX":   {catDependency, "the upstream retry limit was reached"},
	"UT":    {catDependency, "the upstream request timed out"},
	"UR":    {catDependency, "the upstream reset the stream"},
	"LR":    {catDependency, "the connection was reset locally"},
	"UC":    {catConfig, "upstream connection termination: the upstream closed a connection the proxy reused (an idle or keep-alive timeout on the upstream shorter than the proxy's)"},
	"LH":    {catDependency, "the local service failed its health check"},
	"SI":    {catDependency, "the stream idle timeout expired"},
	"UPE":   {catDependency, "the upstream response had an HTTP protocol error"},
	"UMSDR": {catConfig, "the upstream request reached the configured maximum stream duration"},
	"DT":    {catConfig, "the request exceeded the configured maximum connection duration"},
	"RL":    {catResource, "the request was rate limited locally"},
	"RLSE":  {catDependency, "the rate limit service failed"},
	"UAEX":  {catConfig, "the external authorization service denied the request"},
	"FI":    {catConfig, "the request was aborted by a fault-injection rule"},
	"OM":    {catResource, "the proxy's overload manager rejected the request"},
	"DF":    {catDependency, "the proxy's DNS resolution of the upstream failed"},
}

// reProxyFlags finds the response flags of an access-log line: after the
// status of Envoy's default text format ("GET /x HTTP/1.1" 503 UC), or
// as a response_flags field (JSON, key=value).
var reProxyFlags = regexp.MustCompile(`"(?:` + httpMethods + `|CONNECT) [^"]*" (?:\d{3}|0) ([A-Z]{1,5}(?:,[A-Z]{1,5})*) |(?i:response_flags)"?\s*[=:]\s*"?([A-Z]{1,5}(?:,[A-Z]{1,5})*)\b`)

// proxyFlag is the first known response flag of an access-log line, with
// its row.
func proxyFlag(msg string) (string, flagRow, bool) {
	m := reProxyFlags.FindStringSubmatch(msg)
	if m == nil {
		return "", flagRow{}, false
	}
	for _, f := range strings.Split(m[1]+m[2], ",") {
		if row, ok := responseFlags[f]; ok {
			return f, row, true
		}
	}
	return "", flagRow{}, false
}

// reFailedRequest: a line that records one request answered with a server
// error, whatever the logger's level (access logs are written at INFO):
// the status after the quoted request of the common log format, or a
// status field.
var reFailedRequest = regexp.MustCompile(`"(?:` + httpMethods + `) [^"]*" 5\d\d\b|\b(?:status|status_code|response_code|code)[=:]\s*"?5\d\d\b`)

// failedRequestLine: a line that records a request the proxy or server
// failed, whatever the logger's level: a server-error status, or a
// response flag of the table (a 503 UH, a 0 UF on a TCP connection).
func failedRequestLine(msg string) bool {
	if reFailedRequest.MatchString(msg) {
		return true
	}
	_, _, ok := proxyFlag(msg)
	return ok
}
