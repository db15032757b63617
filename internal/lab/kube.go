package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KwokNodeAnnotation marks the nodes kwok manages (heartbeats, pod
// lifecycle). Scenario nodes never carry it, so kwok leaves their recorded
// status alone; give it to extra nodes that should behave like live ones.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// Kube is a running Kubernetes control plane: etcd, a kube-apiserver and
// kwok. There are no controllers, scheduler or kubelets: objects keep
// exactly the status written to them, which is what a recorded scenario needs.
type Kube struct {
	Dir string
	// Kubeconfig is an admin kubeconfig (client certificate in group
	// system:masters) for URL.
	Kubeconfig string
	URL        string
	EtcdURL    string
	// KwokAddr is host:port of kwok's kubelet-like server (HTTPS): the API
	// server proxies pods/log there for nodes that point at it.
	KwokAddr string

	Etcd, APIServer, Kwok *Process

	pki      *pki
	kwokArgs []string
}

// Stop stops kwok, the API server and etcd, in that order.
func (k *Kube) Stop() {
	if k == nil {
		return
	}
	k.Kwok.Stop()
	k.APIServer.Stop()
	k.Etcd.Stop()
}

// Procs lists the running processes.
func (k *Kube) Procs() []*Process {
	var out []*Process
	for _, p := range []*Process{k.Etcd, k.APIServer, k.Kwok} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// CacheDir is where scripts/kube-apiserver.sh keeps its builds:
// $RCAMESH_CACHE, else $HOME/.cache/rcamesh.
func CacheDir() string {
	if d := os.Getenv("RCAMESH_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "rcamesh")
}

// LookBin finds a server binary: on PATH, in $RCAMESH_KUBE_BIN, else in the
// newest build under CacheDir()/kube-*/bin. The error wraps ErrMissing.
func LookBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("RCAMESH_KUBE_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if c := CacheDir(); c != "" {
		found, _ := filepath.Glob(filepath.Join(c, "kube-*", "bin"))
		sort.Sort(sort.Reverse(sort.StringSlice(found)))
		dirs = append(dirs, found...)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s (not on PATH nor under %s; run scripts/kube-apiserver.sh)", ErrMissing, name, CacheDir())
}

// StartKube starts etcd, kube-apiserver and kwok on free 127.0.0.1 ports
// with their data under dir and writes an admin kubeconfig there. The
// processes stop when ctx is done or Stop is called.
func StartKube(ctx context.Context, dir string) (k *Kube, err error) {
	apiBin, err := LookBin("kube-apiserver")
	if err != nil {
		return nil, err
	}
	if _, err := LookBin("kwok"); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("%w: etcd (%v)", ErrMissing, err)
	}
	k = &Kube{Dir: dir}
	defer func() {
		if err != nil {
			k.Stop()
		}
	}()
	if k.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, err
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	k.Etcd, err = start(ctx, "etcd", "etcd", []string{
		"--name=lab", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=lab=" + peerURL, "--initial-cluster-state=new",
		"--log-level=warn", "--logger=zap",
	}, dir)
	if err != nil {
		return nil, err
	}
	k.EtcdURL = clientURL
	if err := waitHTTP(ctx, k.Etcd, clientURL+"/health", 30*time.Second); err != nil {
		return nil, err
	}

	k.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	p := k.pki
	k.APIServer, err = start(ctx, "kube-apiserver", apiBin, []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + p.ServingCert, "--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CA,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPub, "--service-account-signing-key-file=" + p.SAKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		// Objects are stored as JSON so LoadScenario can restore the
		// metadata the API server stamps at creation (see restoreMetadata).
		"--storage-media-type=application/json",
		// No controllers run: nothing would create the "default" service
		// account; and no admission plugin may add taints, tolerations or
		// finalizers or labels (node topology copied onto pods) that the
		// recording does not have.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,DefaultTolerationSeconds,StorageObjectInUseProtection,PodTopologyLabels",
		"--event-ttl=8760h",
		"--kubelet-client-certificate=" + p.KubeletClient, "--kubelet-client-key=" + p.KubeletKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}, dir)
	if err != nil {
		return nil, err
	}
	if err := k.waitAPI(ctx, 120*time.Second); err != nil {
		return nil, err
	}
	k.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(k.Kubeconfig, k.URL, p); err != nil {
		return nil, err
	}

	k.KwokAddr = fmt.Sprintf("127.0.0.1:%d", ports[3])
	k.kwokArgs = []string{
		"--kubeconfig=" + k.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--server-address=" + k.KwokAddr,
		"--tls-cert-file=" + p.KwokCert, "--tls-private-key-file=" + p.KwokKey,
		"--node-ip=127.0.0.1", fmt.Sprintf("--node-port=%d", ports[3]),
		"--cidr=10.244.0.0/16",
	}
	if err := k.startKwok(ctx, nil); err != nil {
		return nil, err
	}
	return k, nil
}

// startKwok (re)starts kwok with a configuration file holding extra
// documents (kwok.x-k8s.io Logs objects).
func (k *Kube) startKwok(ctx context.Context, docs [][]byte) error {
	k.Kwok.Stop()
	bin, err := LookBin("kwok")
	if err != nil {
		return err
	}
	stages, err := kwokStages(bin)
	if err != nil {
		return err
	}
	cfg := filepath.Join(k.Dir, "kwok.yaml")
	// No KwokConfiguration document: its defaults apply, flags set the rest.
	var body string
	for _, d := range append(stages, docs...) {
		body += "---\n" + strings.TrimSpace(string(d)) + "\n"
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return fmt.Errorf("lab: kwok config: %w", err)
	}
	p, err := start(ctx, "kwok", bin, append([]string{"--config=" + cfg}, k.kwokArgs...), k.Dir)
	if err != nil {
		return err
	}
	k.Kwok = p
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return poll(ctx, p, 60*time.Second, func() bool {
		resp, err := insecure.Get("https://" + k.KwokAddr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kwokStages reads the kwok Stage objects (node and pod lifecycles) that
// scripts/kube-apiserver.sh copies from the kwok module next to the binary
// ($RCAMESH_KWOK_STAGES overrides the folder).
func kwokStages(kwokBin string) ([][]byte, error) {
	dir := os.Getenv("RCAMESH_KWOK_STAGES")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(kwokBin), "..", "kwok-stages")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: kwok stages (no *.yaml under %s; run scripts/kube-apiserver.sh)", ErrMissing, dir)
	}
	sort.Strings(files)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("lab: kwok stage: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

// waitAPI polls /readyz with the admin certificate.
func (k *Kube) waitAPI(ctx context.Context, timeout time.Duration) error {
	cert, err := tls.X509KeyPair(k.pki.adminPEM, k.pki.adminKeyPM)
	if err != nil {
		return fmt.Errorf("lab: admin key pair: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(k.pki.caPEM)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}
	return poll(ctx, k.APIServer, timeout, func() bool {
		resp, err := c.Get(k.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// poll calls ok every 100ms until it returns true, p exits, ctx ends or
// timeout passes.
func poll(ctx context.Context, p *Process, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: %s not ready after %s\n%s", p.Name, timeout, p.Log())
		}
		select {
		case <-p.done:
			return fmt.Errorf("lab: %s exited: %v\n%s", p.Name, p.err, p.Log())
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func writeKubeconfig(path, server string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["lab-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminPEM, ClientKeyData: p.adminKeyPM}
	cfg.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab-admin"}
	cfg.CurrentContext = "lab"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("lab: kubeconfig: %w", err)
	}
	return nil
}

// IsMissing reports whether err says a server binary is not installed.
func IsMissing(err error) bool {
	return errors.Is(err, ErrMissing) || (err != nil && strings.Contains(err.Error(), ErrMissing.Error()))
}
