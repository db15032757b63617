package deploy

import (
	"flag"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/modules"
)

// serveConfig parses a container's `rcamesh serve` arguments with the real
// flag set of `rcamesh serve` (process, security and module flags), so a
// flag the binary does not know fails here as it would fail the pod.
func serveConfig(t *testing.T, args []string) app.Config {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("container does not run `rcamesh serve`: %v", args)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := app.DefaultConfig()
	cfg.RegisterFlags(fs)
	fs.String("log.level", "info", "")
	fs.String("log.format", "text", "")
	reg := app.NewRegistry()
	if err := modules.Register(reg, modules.Options{}); err != nil {
		t.Fatal(err)
	}
	reg.RegisterFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatalf("rcamesh serve rejects the chart's arguments: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("rcamesh serve rejects the chart's configuration: %v", err)
	}
	return cfg
}

// mountedFrom is the volume a file of the container lives on, and its name
// inside that volume.
func mountedFrom(t *testing.T, pod corev1.PodSpec, ctr corev1.Container, file string) (corev1.Volume, string) {
	t.Helper()
	for _, m := range ctr.VolumeMounts {
		if path.Dir(file) == m.MountPath {
			for _, v := range pod.Volumes {
				if v.Name == m.Name {
					return v, path.Base(file)
				}
			}
		}
	}
	t.Fatalf("%s: %s is on no volume of the pod", ctr.Name, file)
	return corev1.Volume{}, ""
}

// secretKey asserts file comes from key of Secret name.
func secretKey(t *testing.T, pod corev1.PodSpec, ctr corev1.Container, file, name, key string) {
	t.Helper()
	v, base := mountedFrom(t, pod, ctr, file)
	if v.Secret == nil || v.Secret.SecretName != name {
		t.Errorf("%s: %s is not from Secret %s: %+v", ctr.Name, file, name, v.VolumeSource)
		return
	}
	for _, it := range v.Secret.Items {
		if it.Path == base && it.Key == key {
			return
		}
	}
	if len(v.Secret.Items) > 0 || base != key {
		t.Errorf("%s: %s is not key %s of Secret %s: items %v", ctr.Name, file, key, name, v.Secret.Items)
	}
}

// TestChartSecuresEveryListener renders the chart with several security
// settings and parses every rcamesh container's arguments with the real
// `rcamesh serve` flags: each has its own credentials file, mounted from a
// Secret that only its Deployment mounts, which loads as an identity of its
// own service only (NATS user and signing key); no listener beyond loopback
// is without authentication (tokens file from the tokens Secret, or OIDC);
// TLS options reach every pod. Without tokens or OIDC the chart refuses to
// render.
func TestChartSecuresEveryListener(t *testing.T) {
	meshKey := []byte(strings.Repeat("k", auth.MinMeshKeyBytes))
	cases := []struct {
		name   string
		values map[string]any
		tokens bool
		oidc   bool
		tls    bool
		mtls   bool
	}{
		{name: "default", values: natsValues(manifestsNATS), tokens: true},
		{name: "oidc only", oidc: true, values: map[string]any{
			"auth": map[string]any{"tokensSecret": map[string]any{"enabled": false},
				"oidc": map[string]any{"issuer": "https://idp.example.com", "audience": "rcamesh", "jwksURL": "https://idp.example.com/jwks"}}}},
		{name: "tokens, oidc from a ConfigMap, webhooks, mTLS", tokens: true, oidc: true, tls: true, mtls: true, values: map[string]any{
			"auth": map[string]any{"tokensSecret": map[string]any{"name": "tok", "key": "lines"},
				"oidc":           map[string]any{"issuer": "https://idp.example.com", "audience": "rcamesh", "jwksConfigMap": map[string]any{"name": "jwks"}},
				"webhooksSecret": map[string]any{"name": "hooks"}, "corsOrigins": []any{"https://ops.example.com"}},
			"tls":  map[string]any{"enabled": true, "secretName": "mesh-tls", "requireClientCert": true},
			"mesh": map[string]any{"credentialsSecrets": map[string]any{"brain": "brain-cred"}}}},
		{name: "TLS without client certificates", tokens: true, tls: true, values: map[string]any{
			"tls": map[string]any{"enabled": true, "secretName": "mesh-tls"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, "rcamesh", "rcamesh", tc.values)
			if err != nil {
				t.Fatal(err)
			}
			credSecrets := map[string]string{}
			n := 0
			for _, o := range objects(t, out) {
				if o.GetKind() != "Deployment" {
					continue
				}
				n++
				var d appsv1.Deployment
				fromUnstructured(t, o, &d)
				component := d.Spec.Template.Labels["app.kubernetes.io/component"]
				pod := d.Spec.Template.Spec
				for _, ctr := range pod.Containers {
					cfg := serveConfig(t, ctr.Args)
					a := cfg.Auth
					listeners := map[string]string{"grpc.addr": cfg.Server.GRPCAddr, "http.addr": cfg.Server.HTTPAddr}
					for flagName, addr := range listeners {
						if !auth.Loopback(addr) && (!a.Enabled() || a.InsecureOpen) {
							t.Errorf("%s listens on %s (-%s) without authentication", component, addr, flagName)
						}
					}
					if err := a.CheckExposure(listeners); err != nil {
						t.Errorf("%s: %v", component, err)
					}
					if a.InsecureOpen || a.MeshKeyFile != "" {
						t.Errorf("%s: open mode %v or the mesh key %q in a pod", component, a.InsecureOpen, a.MeshKeyFile)
					}
					if (a.TokensFile != "") != tc.tokens || a.JWT.Enabled() != tc.oidc {
						t.Errorf("%s: tokens %q, JWT %v; want tokens %v, OIDC %v", component, a.TokensFile, a.JWT.Enabled(), tc.tokens, tc.oidc)
					}
					if tc.tokens {
						name := "rcamesh-api-tokens"
						key := "api-tokens"
						if tc.name != "default" {
							if v, ok := tc.values["auth"].(map[string]any); ok {
								name, key = v["tokensSecret"].(map[string]any)["name"].(string), "lines"
							}
						}
						secretKey(t, pod, ctr, a.TokensFile, name, key)
					}
					if tc.oidc && a.JWT.JWKSFile != "" {
						if v, _ := mountedFrom(t, pod, ctr, a.JWT.JWKSFile); v.ConfigMap == nil || v.ConfigMap.Name != "jwks" {
							t.Errorf("%s: JWKS not from ConfigMap jwks: %+v", component, v.VolumeSource)
						}
					}
					if tc.tls != a.TLS.Enabled() || tc.mtls != a.TLS.RequireClientCert {
						t.Errorf("%s: TLS %v mTLS %v, want %v %v", component, a.TLS.Enabled(), a.TLS.RequireClientCert, tc.tls, tc.mtls)
					}
					if tc.tls {
						for _, f := range []string{a.TLS.CertFile, a.TLS.KeyFile, a.TLS.ClientCAFile} {
							if v, _ := mountedFrom(t, pod, ctr, f); v.Secret == nil || v.Secret.SecretName != "mesh-tls" {
								t.Errorf("%s: %s not from the TLS Secret", component, f)
							}
						}
						if p := ctr.ReadinessProbe; p.HTTPGet != nil && p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
							t.Errorf("%s: readiness probes plain HTTP on a TLS listener", component)
						}
					}

					// Its own credentials, from a Secret no other Deployment mounts.
					if a.CredentialsFile == "" {
						t.Fatalf("%s has no -mesh.credentials-file", component)
					}
					v, _ := mountedFrom(t, pod, ctr, a.CredentialsFile)
					if v.Secret == nil {
						t.Fatalf("%s: credentials not from a Secret", component)
					}
					want := "rcamesh-mesh-" + component
					if component == "brain" && tc.mtls {
						want = "brain-cred"
					}
					secretKey(t, pod, ctr, a.CredentialsFile, want, "mesh.cred")
					if other, dup := credSecrets[v.Secret.SecretName]; dup {
						t.Errorf("%s and %s mount the same credentials Secret %s", component, other, v.Secret.SecretName)
					}
					credSecrets[v.Secret.SecretName] = component
					// What `rcamesh mesh-credentials -per-service` puts in that
					// Secret loads as this service's identity only.
					c, err := auth.IssueCredentials(meshKey, []string{component}, bus.UserFor([]string{component}), bus.Services)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Auth.CredentialsFile = filepath.Join(t.TempDir(), "mesh.cred")
					if err := auth.WriteCredentials(cfg.Auth.CredentialsFile, c); err != nil {
						t.Fatal(err)
					}
					id, err := cfg.Identity()
					if err != nil {
						t.Fatalf("%s: %v", component, err)
					}
					if id.NATSUser() != bus.UserPrefix+component || id.HasMeshKey() {
						t.Errorf("%s: NATS user %s, mesh key %v", component, id.NATSUser(), id.HasMeshKey())
					}
					for _, other := range components {
						if _, ok := id.SigningKey(other); ok != (other == component) {
							t.Errorf("%s can sign as %s: %v", component, other, ok)
						}
					}
				}
			}
			if n != len(components) {
				t.Errorf("%d Deployments, want %d", n, len(components))
			}
		})
	}

	for _, bad := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"auth": map[string]any{"tokensSecret": map[string]any{"enabled": false}}}, "authentication is required"},
		{map[string]any{"auth": map[string]any{"oidc": map[string]any{"jwksURL": "https://idp/jwks"}}}, "needs issuer and audience"},
		{map[string]any{"tls": map[string]any{"enabled": true}}, "tls.secretName"},
	} {
		if _, err := render(t, "rcamesh", "rcamesh", bad.values); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("values %v: error %v, want %q", bad.values, err, bad.want)
		}
	}
}

// TestNATSValuesCarryTheMeshUsers: the values the README installs the
// official NATS chart with and the subchart's values in the rcamesh chart
// are the same, and both include the users of `rcamesh nats-config
// -authorization-only` from the Secret the pods mount.
func TestNATSValuesCarryTheMeshUsers(t *testing.T) {
	read := func(file string) map[string]any {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return m
	}
	standalone := read("helm/nats-values.yaml")
	sub := read(chartDir + "/values.yaml")["nats"].(map[string]any)
	for _, k := range []string{"config", "container", "podTemplate"} {
		if !reflect.DeepEqual(standalone[k], sub[k]) {
			t.Errorf("nats %s differs between helm/nats-values.yaml and the chart's nats values:\n%v\n%v", k, standalone[k], sub[k])
		}
	}
	cfg := standalone["config"].(map[string]any)
	include, _ := cfg["merge"].(map[string]any)["$include"].(string)
	if include == "" {
		t.Fatal("the NATS config includes no authorization")
	}
	// nats-server resolves an include against its config's directory,
	// /etc/nats-config in the official chart.
	file := filepath.Clean(filepath.Join("/etc/nats-config", include))
	mounted := false
	for _, p := range standalone["container"].(map[string]any)["patch"].([]any) {
		m := p.(map[string]any)["value"].(map[string]any)
		if m["mountPath"] == filepath.Dir(file) && m["name"] == "rcamesh-nats-auth" {
			mounted = true
		}
	}
	secret := false
	for _, p := range standalone["podTemplate"].(map[string]any)["patch"].([]any) {
		m := p.(map[string]any)["value"].(map[string]any)
		if s, ok := m["secret"].(map[string]any); ok && m["name"] == "rcamesh-nats-auth" && s["secretName"] == "rcamesh-nats-auth" {
			secret = true
		}
	}
	if !mounted || !secret || filepath.Base(file) != "auth.conf" {
		t.Errorf("%s is not the auth.conf of Secret rcamesh-nats-auth (mounted %v, volume %v)", file, mounted, secret)
	}
	if cfg["jetstream"].(map[string]any)["enabled"] != true || cfg["cluster"].(map[string]any)["enabled"] != true {
		t.Error("NATS without JetStream or cluster")
	}
}

// k8sSecrets runs scripts/k8s-secrets.sh with a freshly built rcamesh and
// returns the Secrets it prints (for kubectl apply).
func k8sSecrets(t *testing.T, release string) []corev1.Secret {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "rcamesh")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/rcamesh").CombinedOutput(); err != nil {
		t.Fatalf("build rcamesh: %v\n%s", err, out)
	}
	cmd := exec.Command("scripts/k8s-secrets.sh", release)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "RCAMESH="+bin, "RCAMESH_SECRETS_DIR="+filepath.Join(dir, "secrets"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("k8s-secrets.sh: %v\n%s", err, stderr.String())
	}
	if key, err := os.ReadFile(filepath.Join(dir, "secrets", "mesh.key")); err != nil || strings.Contains(string(out), strings.TrimSpace(string(key))) {
		t.Fatalf("the mesh key (%v) leaves the machine in the Secrets", err)
	}
	var secrets []corev1.Secret
	for _, doc := range strings.Split(string(out), "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var s corev1.Secret
		if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
			t.Fatalf("k8s-secrets.sh printed a bad Secret: %v\n%.300s", err, doc)
		}
		secrets = append(secrets, s)
	}
	return secrets
}
