// Package registry starts Debian's docker-registry on 127.0.0.1 with the project's fixture
// images (registry-fixtures' seed-registry, every set) and reads what each image runs on from
// the catalog seed-registry writes: the images the policy looks up for real.
package registry

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Platform is an index entry's platform, or a single image's config.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
	OSVersion    string `json:"os.version,omitempty"`
	// Attestation: a BuildKit attestation entry, which runs nowhere.
	Attestation bool `json:"attestation,omitempty"`
	// Depth: in Image.Flattened, how deep the entry is nested (the tagged index's own are at 1).
	Depth int `json:"depth,omitempty"`
}

// Image is a catalog entry: `repository:tag` and what it runs on.
type Image struct {
	Image string `json:"image"`
	// Digest is the tagged manifest's (`repository@digest` names the same image).
	Digest    string     `json:"digest"`
	MediaType string     `json:"mediaType"`
	Platforms []Platform `json:"platforms"`
	// Flattened: for an index that lists indexes, the entries of every index it nests (each
	// with its Depth), where Platforms has the nested index's own entry (no platform).
	Flattened []Platform `json:"flattened,omitempty"`
	// Labels are a single image's config labels, when it has any besides the fixture's own.
	Labels map[string]string `json:"labels,omitempty"`
}

// Registry is a running registry seeded with the fixtures.
type Registry struct {
	// Addr is host:port, spoken to over plain HTTP.
	Addr string
	// Sources is kwctl's sources.yml naming Addr insecure.
	Sources string
	// Catalog is every pushed image by `repository:tag`.
	Catalog map[string]Image
	cmd     *exec.Cmd
}

// Stop stops the registry before the test ends: every request after it fails.
func (r *Registry) Stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

// Ref is the reference of the catalog image `repository:tag` in this registry.
func (r *Registry) Ref(image string) string { return r.Addr + "/" + image }

// Start starts docker-registry (DOCKER_REGISTRY_BIN, else docker-registry on PATH) and seeds
// it with seedRegistry (the seed-registry binary); both stop with t.
func Start(t testing.TB, seedRegistry string) *Registry {
	t.Helper()
	bin := os.Getenv("DOCKER_REGISTRY_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("docker-registry"); err != nil {
			t.Fatalf("docker-registry is not installed (apt-get install docker-registry, or `make deps`): %v", err)
		}
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  secret: k8s-judge-not-a-secret
`, filepath.Join(dir, "storage"), addr)
	write(t, filepath.Join(dir, "config.yml"), config)
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	log, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not answer on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	catalog := filepath.Join(dir, "catalog.json")
	seed := exec.Command(seedRegistry, "--registry", addr, "--set", "all", "--catalog", catalog)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", seedRegistry, err, out)
	}
	var images []Image
	data, err := os.ReadFile(catalog)
	if err == nil {
		err = json.Unmarshal(data, &images)
	}
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	r := &Registry{Addr: addr, Sources: filepath.Join(dir, "sources.yml"), Catalog: map[string]Image{}, cmd: cmd}
	for _, image := range images {
		r.Catalog[image.Image] = image
	}
	write(t, r.Sources, fmt.Sprintf("insecure_sources: [%q]\n", addr))
	return r
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
