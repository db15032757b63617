package tools

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
)

var (
	vaultSyncGVR = schema.GroupVersionResource{Group: "sync.example.io", Version: "v1", Resource: "vaultsyncs"}
	tlsCertGVR   = schema.GroupVersionResource{Group: "pki.example.io", Version: "v1alpha1", Resource: "tlscerts"}
)

func customObj(apiVersion, kind, ns, name string, spec, status map[string]any, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	if status != nil {
		u.Object["status"] = status
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetOwnerReferences(owners)
	return u
}

// withCustom adds a dynamic client holding objs and the kinds they use.
func withCustom(t *testing.T, ts *testSet, objs ...*unstructured.Unstructured) {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{vaultSyncGVR: "VaultSyncList", tlsCertGVR: "TLSCertList"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	for _, o := range objs {
		gvr := vaultSyncGVR
		if o.GetKind() == "TLSCert" {
			gvr = tlsCertGVR
		}
		if err := dc.Tracker().Create(gvr, o, o.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	ts.set.Dynamic = dc
	ts.set.Kinds = backend.StaticKinds{
		{GVR: vaultSyncGVR, Kind: "VaultSync", Namespaced: true},
		{GVR: tlsCertGVR, Kind: "TLSCert", Namespaced: true},
	}
}

func TestDescribeCustomResource(t *testing.T) {
	sync := customObj("sync.example.io/v1", "VaultSync", "shop", "cart-creds",
		map[string]any{"pollEvery": "12h", "target": map[string]any{"name": "cart-db"}, "password": "hunter2", "paths": []any{"kv/cart/db"}},
		map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "SyncFailed", "message": "upstream 403"}}, "lastSync": "2026-03-10T00:00:00Z"})
	cert := customObj("pki.example.io/v1alpha1", "TLSCert", "shop", "web-tls", map[string]any{"secretName": "web-tls", "renewBefore": "0h"}, nil)
	tests := []struct {
		name, kind, resName string
		wantKind            string
		wantSignals         []string
		wantCond            string
		forbid              string
		wantErr             string
		wantNotFound        bool
	}{
		{name: "by kind", kind: "VaultSync", resName: "cart-creds", wantKind: "VaultSync",
			wantSignals: []string{"spec.pollEvery=12h", "spec.target.name=cart-db", "spec.paths[0]=kv/cart/db", "status.lastSync=2026-03-10T00:00:00Z", "spec.password="},
			wantCond:    "SyncFailed", forbid: "hunter2"},
		{name: "by plural, lower case", kind: "tlscerts", resName: "web-tls", wantKind: "TLSCert", wantSignals: []string{"spec.renewBefore=0h"}},
		{name: "by kind.group", kind: "vaultsync.sync.example.io", resName: "cart-creds", wantKind: "VaultSync"},
		{name: "missing object", kind: "VaultSync", resName: "nope", wantNotFound: true},
		{name: "unknown kind", kind: "Gizmo", resName: "x", wantErr: "no such kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestSet()
			withCustom(t, ts, sync, cert)
			s := newService(t, ts.set, nil)
			if tc.wantErr != "" {
				resp, err := s.ExecuteTool(t.Context(), execReq(t, "describe_resource", map[string]any{"kind": tc.kind, "name": tc.resName, "namespace": "shop"}))
				msg := resp.GetResult().GetError()
				if err != nil {
					msg = err.Error()
				}
				if resp.GetResult().GetSuccess() || !strings.Contains(msg, tc.wantErr) {
					t.Fatalf("err = %v / %q, want %q", err, msg, tc.wantErr)
				}
				return
			}
			r := run(t, s, "describe_resource", map[string]any{"kind": tc.kind, "name": tc.resName, "namespace": "shop"}).GetResult()
			res := decode[[]facts.Resource](t, r, facts.KeyResources)
			if tc.wantNotFound {
				if !r.GetNoData() || len(res) != 0 {
					t.Fatalf("want no data, got %+v", res)
				}
				return
			}
			if len(res) != 1 || res[0].Kind != tc.wantKind {
				t.Fatalf("resources = %+v", res)
			}
			got := strings.Join(res[0].Signals, "\n")
			for _, w := range tc.wantSignals {
				if !strings.Contains(got, w) {
					t.Errorf("signals lack %q:\n%s", w, got)
				}
			}
			if tc.wantCond != "" && (len(res[0].Conditions) != 1 || res[0].Conditions[0].Reason != tc.wantCond) {
				t.Errorf("conditions = %+v", res[0].Conditions)
			}
			if tc.forbid != "" && (strings.Contains(got, tc.forbid) || strings.Contains(r.GetRawOutput(), tc.forbid)) {
				t.Errorf("credential %q leaked", tc.forbid)
			}
		})
	}
}

func TestDescribeCustomSignalsCapped(t *testing.T) {
	spec := map[string]any{}
	for i := 0; i < 3*maxCustomSignals; i++ {
		spec[strings.Repeat("k", i%5+1)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = i
	}
	res := customFact(customObj("sync.example.io/v1", "VaultSync", "shop", "big", spec, nil), "VaultSync")
	if len(res.Signals) != maxCustomSignals+1 || !strings.Contains(res.Signals[maxCustomSignals], "more fields") {
		t.Fatalf("signals not capped: %d lines, last %q", len(res.Signals), res.Signals[len(res.Signals)-1])
	}
}

func TestDescribeSecretAndConfigMapManagers(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "pki.example.io/v1alpha1", Kind: "TLSCert", Name: "web-tls"}
	tests := []struct {
		name        string
		kind, obj   string
		objects     []runtime.Object
		custom      []*unstructured.Unstructured
		wantManaged []string
		wantSignal  string
		wantNoData  bool
	}{
		{
			name: "secret referenced by a custom resource's spec", kind: "secret", obj: "cart-pg",
			objects:     []runtime.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cart-pg", Namespace: "shop"}, Data: map[string][]byte{"DB_PASS": []byte("s3cr3t")}}},
			custom:      []*unstructured.Unstructured{customObj("sync.example.io/v1", "VaultSync", "shop", "cart-creds", map[string]any{"pollEvery": "12h", "target": map[string]any{"name": "cart-pg"}}, nil)},
			wantManaged: []string{"VaultSync/cart-creds"}, wantSignal: "spec.pollEvery=12h",
		},
		{
			name: "secret owned by a custom resource, secret itself unreadable", kind: "secret", obj: "web-tls",
			custom:      []*unstructured.Unstructured{customObj("pki.example.io/v1alpha1", "TLSCert", "shop", "web-tls", map[string]any{"renewBefore": "0h", "secretName": "web-tls"}, nil)},
			wantManaged: []string{"TLSCert/web-tls"}, wantSignal: "spec.renewBefore=0h",
		},
		{
			name: "configmap owned by a custom resource", kind: "configmap", obj: "edge-conf",
			objects:     []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "edge-conf", Namespace: "shop", OwnerReferences: []metav1.OwnerReference{owner}}, Data: map[string]string{"a": "b"}}},
			custom:      []*unstructured.Unstructured{customObj("pki.example.io/v1alpha1", "TLSCert", "shop", "web-tls", map[string]any{"renewBefore": "1h"}, nil)},
			wantManaged: []string{"TLSCert/web-tls"}, wantSignal: "spec.renewBefore=1h",
		},
		{
			name: "unrelated custom resource in another namespace", kind: "secret", obj: "cart-pg",
			objects: []runtime.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cart-pg", Namespace: "shop"}}},
			custom:  []*unstructured.Unstructured{customObj("sync.example.io/v1", "VaultSync", "billing", "cart-creds", map[string]any{"target": map[string]any{"name": "cart-pg"}}, nil)},
		},
		{name: "missing secret, no manager", kind: "secret", obj: "ghost", wantNoData: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestSet()
			for _, o := range tc.objects {
				if err := ts.kube.Tracker().Add(o); err != nil {
					t.Fatal(err)
				}
			}
			withCustom(t, ts, tc.custom...)
			s := newService(t, ts.set, nil)
			r := run(t, s, "describe_resource", map[string]any{"kind": tc.kind, "name": tc.obj, "namespace": "shop"}).GetResult()
			if strings.Contains(r.GetRawOutput(), "s3cr3t") {
				t.Fatalf("secret value leaked:\n%s", r.GetRawOutput())
			}
			res := decode[[]facts.Resource](t, r, facts.KeyResources)
			if tc.wantNoData {
				if !r.GetNoData() {
					t.Fatalf("want no data, got %+v", res)
				}
				return
			}
			if len(res) != 1+len(tc.wantManaged) {
				t.Fatalf("resources = %+v", res)
			}
			if strings.Join(res[0].ManagedBy, ",") != strings.Join(tc.wantManaged, ",") {
				t.Errorf("managed by = %v, want %v", res[0].ManagedBy, tc.wantManaged)
			}
			if tc.wantSignal != "" && !strings.Contains(strings.Join(res[1].Signals, "\n"), tc.wantSignal) {
				t.Errorf("manager signals %v lack %q", res[1].Signals, tc.wantSignal)
			}
		})
	}
}

func TestListJobs(t *testing.T) {
	start := metav1.NewTime(t0.Add(-50 * time.Minute))
	done := metav1.NewTime(t0.Add(-10 * time.Minute))
	ok := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "rollup-001", Namespace: "etl", OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "rollup"}}},
		Status: batchv1.JobStatus{StartTime: &start, CompletionTime: &done, Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	bad := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "export-7", Namespace: "etl"},
		Status: batchv1.JobStatus{StartTime: &start, Failed: 3, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}}
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "rollup", Namespace: "etl"}, Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent}}
	tests := []struct {
		name    string
		params  map[string]any
		want    []string
		failed  bool
		noData  bool
		checkOK bool
	}{
		{name: "all namespaces", params: map[string]any{"namespace": "all"}, want: []string{"Job/rollup-001", "Job/export-7", "CronJob/rollup"}, failed: true, checkOK: true},
		{name: "by cronjob name", params: map[string]any{"namespace": "etl", "name": "rollup"}, want: []string{"Job/rollup-001", "CronJob/rollup"}, checkOK: true},
		{name: "empty namespace", params: map[string]any{"namespace": "web"}, noData: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestSet()
			for _, o := range []runtime.Object{ok, bad, cron} {
				if err := ts.kube.Tracker().Add(o); err != nil {
					t.Fatal(err)
				}
			}
			s := newService(t, ts.set, nil)
			r := run(t, s, "list_jobs", tc.params).GetResult()
			res := decode[[]facts.Resource](t, r, facts.KeyResources)
			if r.GetNoData() != tc.noData {
				t.Fatalf("no data = %v, want %v", r.GetNoData(), tc.noData)
			}
			var got []string
			for _, x := range res {
				got = append(got, x.Kind+"/"+x.Name)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(got, ","), w) {
					t.Errorf("got %v, want %s", got, w)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if strings.Contains(r.GetSummary(), "failed") != tc.failed {
				t.Errorf("summary %q: failed = %v", r.GetSummary(), tc.failed)
			}
			if tc.checkOK {
				for _, x := range res {
					if x.Name == "rollup-001" && (x.CompletedAt == nil || !x.CompletedAt.Equal(done.Time) || x.CreatedAt == nil || strings.Join(x.Owners, "") != "CronJob/rollup") {
						t.Errorf("job fact = %+v", x)
					}
				}
			}
		})
	}
}

func execReq(t testing.TB, intent string, params map[string]any) *toolsv1.ExecuteToolRequest {
	t.Helper()
	return &toolsv1.ExecuteToolRequest{SessionId: "sess-1", InvestigationId: "inv-1", Intent: intent, Params: mustStruct(t, params), Context: incidentCtx(), NoCache: true}
}

// A name of "*" lists the namespace's objects of a kind: the first by name
// leads (and names the summary), the others follow in the same pin; none
// is no data; another namespace's objects are not listed.
func TestDescribeCustomListing(t *testing.T) {
	a := customObj("sync.example.io/v1", "VaultSync", "shop", "b-sync", map[string]any{"pollEvery": "1h"}, nil)
	b := customObj("sync.example.io/v1", "VaultSync", "shop", "a-sync", map[string]any{"pollEvery": "2h"}, nil)
	c := customObj("sync.example.io/v1", "VaultSync", "billing", "c-sync", map[string]any{"pollEvery": "3h"}, nil)
	ts := newTestSet()
	withCustom(t, ts, a, b, c)
	s := newService(t, ts.set, nil)
	r := run(t, s, "describe_resource", map[string]any{"kind": "vaultsync", "name": "*", "namespace": "shop"}).GetResult()
	res := decode[[]facts.Resource](t, r, facts.KeyResources)
	if len(res) != 2 || res[0].Name != "a-sync" || res[1].Name != "b-sync" {
		t.Fatalf("resources = %+v, want a-sync then b-sync", res)
	}
	if !strings.Contains(r.GetSummary(), "shop/a-sync (and 1 more)") || strings.Contains(r.GetSummary(), "*") {
		t.Errorf("summary %q", r.GetSummary())
	}
	r = run(t, s, "describe_resource", map[string]any{"kind": "vaultsync", "name": "*", "namespace": "empty"}).GetResult()
	if !r.GetNoData() {
		t.Errorf("an empty namespace: want no data, got %q", r.GetSummary())
	}
}
