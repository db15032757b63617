package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rcamesh/rcamesh/api/openapi"
	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	_ "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	_ "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	_ "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/server"
)

// requestsWithSessionID lists every RPC input of the rcamesh services that
// has a session_id field.
func requestsWithSessionID(t *testing.T) map[string]protoreflect.MessageDescriptor {
	t.Helper()
	out := map[string]protoreflect.MessageDescriptor{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "rcamesh.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				m := svc.Methods().Get(j)
				if m.Input().Fields().ByName("session_id") != nil {
					out[string(svc.FullName())+"/"+string(m.Name())] = m.Input()
				}
			}
		}
		return true
	})
	if len(out) < 20 {
		t.Fatalf("found only %d RPCs taking a session id; are the generated packages linked?", len(out))
	}
	return out
}

func newRequest(t *testing.T, md protoreflect.MessageDescriptor, fields map[string]string) proto.Message {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		t.Fatal(err)
	}
	m := mt.New()
	for k, v := range fields {
		if fd := md.Fields().ByName(protoreflect.Name(k)); fd != nil {
			m.Set(fd, protoreflect.ValueOfString(v))
		}
	}
	return m.Interface()
}

// TestCheckIDsOnEveryRPC: every RPC that takes a session id refuses an
// empty (unless optional by contract), overlong or badly spelt one with
// InvalidArgument, and accepts a valid one.
func TestCheckIDsOnEveryRPC(t *testing.T) {
	optional := map[string]bool{
		"rcamesh.brain.v1.BrainService/SubmitAlert":         true,
		"rcamesh.tools.v1.ToolsService/ListToolDefinitions": true,
		"rcamesh.triage.v1.TriageService/TriageFindings":    true,
	}
	bad := []struct{ name, id string }{
		{"129 bytes", strings.Repeat("a", 129)},
		{"4000 bytes", strings.Repeat("a", 4000)},
		{"space", "a b"},
		{"wildcard", "a.*"},
		{"gt", "a.>"},
		{"slash", "a/b"},
		{"invalid utf-8", "a\xff"},
		{"non-ascii", "sessión"},
		{"newline", "a\nb"},
	}
	for method, md := range requestsWithSessionID(t) {
		check := func(fields map[string]string) codes.Code {
			return status.Code(server.CheckIDs(newRequest(t, md, fields)))
		}
		for _, id := range []string{"s1", "team-a.prod", "team-a_prod", "team:a", strings.Repeat("z", 128)} {
			if c := check(map[string]string{"session_id": id}); c != codes.OK {
				t.Errorf("%s: valid session_id %q refused: %v", method, id, c)
			}
		}
		wantEmpty := codes.InvalidArgument
		if optional[method] {
			wantEmpty = codes.OK
		}
		if c := check(nil); c != wantEmpty {
			t.Errorf("%s: empty session_id gave %v, want %v", method, c, wantEmpty)
		}
		for _, b := range bad {
			for _, field := range []string{"session_id", "parent_session_id", "investigation_id"} {
				if md.Fields().ByName(protoreflect.Name(field)) == nil {
					continue
				}
				fields := map[string]string{"session_id": "s1", field: b.id}
				if c := check(fields); c != codes.InvalidArgument {
					t.Errorf("%s: %s %s gave %v, want InvalidArgument", method, field, b.name, c)
				}
			}
		}
	}
	// A RouterContext carried in "context" is checked too.
	req := &routerv1.InvestigateRequest{SessionId: "s1", Context: &evidencev1.RouterContext{SessionId: strings.Repeat("a", 4000)}}
	if c := status.Code(server.CheckIDs(req)); c != codes.InvalidArgument {
		t.Errorf("context.session_id of 4000 bytes gave %v", c)
	}
	req.Context.SessionId = ""
	if err := server.CheckIDs(req); err != nil {
		t.Errorf("empty context.session_id refused: %v", err)
	}
	if err := server.CheckIDs(&brainv1.ListSessionsRequest{}); err != nil {
		t.Errorf("a request without ids refused: %v", err)
	}
}

// fakeBrain counts the StreamEvents calls that reached the service.
type fakeBrain struct {
	brainv1.UnimplementedBrainServiceServer
	streams atomic.Int32
}

func (f *fakeBrain) StreamEvents(req *brainv1.StreamEventsRequest, ss grpc.ServerStreamingServer[brainv1.StreamEventsResponse]) error {
	f.streams.Add(1)
	return ss.Send(&brainv1.StreamEventsResponse{Event: &evidencev1.SessionEvent{Sequence: req.GetFromSequence()}})
}

// TestIDsRefusedBeforeTheHandler: over gRPC (unary and streaming) and REST,
// a bad session id is refused before the service runs, and the server keeps
// serving.
func TestIDsRefusedBeforeTheHandler(t *testing.T) {
	s := startStack(t, 5*time.Second, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := routerv1.NewRouterServiceClient(s.conn)
	long := strings.Repeat("a", 4000)
	if _, err := rc.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: long}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("gRPC ListTools with a 4000-byte id = %v, want InvalidArgument", err)
	}
	if _, err := rc.ListTools(ctx, &routerv1.ListToolsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("gRPC ListTools without an id = %v, want InvalidArgument", err)
	}

	// Streaming: a separate server with a brain that counts calls.
	gs := server.NewGRPCServer(nil)
	fb := &fakeBrain{}
	brainv1.RegisterBrainServiceServer(gs, fb)
	gl := listen(t)
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.ServeGRPC(sctx, gs, gl, time.Second) }()
	t.Cleanup(func() { stop(); <-done })
	cc, err := server.NewClientConn(gl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	bc := brainv1.NewBrainServiceClient(cc)
	recv := func(id string) error {
		st, err := bc.StreamEvents(ctx, &brainv1.StreamEventsRequest{SessionId: id, FromSequence: 7})
		if err != nil {
			return err
		}
		_, err = st.Recv()
		return err
	}
	for _, id := range []string{long, "", "a b", "a.>"} {
		if err := recv(id); status.Code(err) != codes.InvalidArgument {
			t.Errorf("StreamEvents(%.20q) = %v, want InvalidArgument", id, err)
		}
	}
	if n := fb.streams.Load(); n != 0 {
		t.Errorf("%d refused streams reached the service", n)
	}
	if err := recv("team-a.prod"); err != nil {
		t.Errorf("valid stream: %v", err)
	}

	// REST: 400, with the id's length (not the id) in the message.
	code, _, body := httpGet(t, s.httpURL+"/api/v4/session/"+long+"/tools", nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "4000 bytes") || strings.Contains(string(body), long) {
		t.Errorf("REST with a 4000-byte id = %d %.200s", code, body)
	}
	code, _, body = httpGet(t, s.httpURL+"/api/v4/session/team:a/tools", nil)
	if code != http.StatusOK || !strings.Contains(string(body), "logs for team:a") {
		t.Errorf("REST with team:a = %d %s", code, body)
	}
}

// TestGatewayEdgeCases: the smaller edge bugs of issue 10.
func TestGatewayEdgeCases(t *testing.T) {
	s := startStack(t, 5*time.Second, 0)
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantAllow                string
		contains                 string
	}{
		{"invalid UTF-8 in the path", "GET", "/api/v4/session/%ff%fe/tools", "", 400, "", "UTF-8"},
		{"invalid UTF-8 in a query value", "GET", "/api/v4/session/s1/tools?session_id=%ff", "", 400, "", "UTF-8"},
		{"malformed query", "GET", "/api/v4/session/s1/tools?a=%zz", "", 400, "", "query"},
		{"wrong method on a POST route", "PUT", "/api/v4/session/s1/investigate", `{}`, 405, "POST", "PUT"},
		{"wrong method on a GET route", "DELETE", "/api/v4/session/s1/tools", "", 405, "GET", "DELETE"},
		{"GET on a POST route", "GET", "/api/v4/session/s1/investigate", "", 405, "POST", ""},
		{"unknown path stays 404", "PUT", "/api/v4/nothing/here", "", 404, "", ""},
		{"trailing garbage", "POST", "/api/v4/session/s1/investigate", `{"command":"/logs"} x`, 400, "", "one JSON value"},
		{"second object", "POST", "/api/v4/session/s1/investigate", `{"command":"/logs"}{"command":"/x"}`, 400, "", "one JSON value"},
		{"stray bracket", "POST", "/api/v4/session/s1/investigate", `{"command":"/logs"}]`, 400, "", "one JSON value"},
		{"trailing white space is fine", "POST", "/api/v4/session/s1/investigate", "{\"command\":\"/logs\"}\n\t ", 200, "", "pin_id:pin-1"},
		{"valid", "POST", "/api/v4/session/s1/investigate", `{"command":"/logs"}`, 200, "", "pin_id:pin-1"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, s.httpURL+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.wantCode {
			t.Errorf("%s: %s %s = %d %v, want %d", tt.name, tt.method, tt.path, resp.StatusCode, body, tt.wantCode)
		}
		if got := resp.Header.Get("Allow"); got != tt.wantAllow {
			t.Errorf("%s: Allow = %q, want %q", tt.name, got, tt.wantAllow)
		}
		if !strings.Contains(fmt.Sprint(body), tt.contains) {
			t.Errorf("%s: body %v lacks %q", tt.name, body, tt.contains)
		}
	}
	// Still serving.
	if code, _, body := httpGet(t, s.httpURL+"/api/v4/session/s1/tools", nil); code != 200 {
		t.Errorf("after the edge cases: %d %s", code, body)
	}
}

// TestAllowedMethodsCoverTheOpenAPIDocument: every documented route answers
// its own methods (so a 405 never names too few).
func TestAllowedMethodsCoverTheOpenAPIDocument(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		concrete := path
		for strings.Contains(concrete, "{") {
			i, j := strings.Index(concrete, "{"), strings.Index(concrete, "}")
			concrete = concrete[:i] + "x" + concrete[j+1:]
		}
		got := server.AllowedMethods(concrete)
		for m := range ops {
			if !strings.Contains(strings.Join(got, ","), strings.ToUpper(m)) {
				t.Errorf("AllowedMethods(%s) = %v, lacks %s", concrete, got, m)
			}
		}
	}
	if got := server.AllowedMethods("/api/v4/session/x/investigate"); fmt.Sprint(got) != "[POST]" {
		t.Errorf("investigate allows %v", got)
	}
	if got := server.AllowedMethods("/api/v4/session//investigate"); got != nil {
		t.Errorf("an empty segment matched: %v", got)
	}
	if got := server.AllowedMethods("/api/v4/nothing"); got != nil {
		t.Errorf("unknown path allows %v", got)
	}
}
