// Package policyhost runs the compiled policy on a Kubewarden host: the project's embedded host
// (`embedded-host serve`, one process for many evaluations) or Kubewarden's kwctl (`kwctl run`,
// one process per evaluation), with the same request, settings and registries.
package policyhost

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Response is the AdmissionResponse the hosts print.
type Response struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
	// Patch is the JSON Patch (the hosts print it base64-encoded).
	Patch    []byte   `json:"patch,omitempty"`
	Status   *Status  `json:"status,omitempty"`
	Warnings []string `json:"warnings"`
}

// Status is the response's status.
type Status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

// Message is the status message, or "".
func (r Response) Message() string {
	if r.Status == nil {
		return ""
	}
	return r.Status.Message
}

// Host evaluates one AdmissionRequest (JSON) with settings.
type Host interface {
	Name() string
	Evaluate(request []byte, settings any) (Response, error)
	Close() error
}

// Options say how the policy is run on either host.
type Options struct {
	// Module is the policy's module (policy.wasm for the embedded host, which reads the
	// metadata.yml beside it; annotated-policy.wasm for kwctl).
	Module string
	// Sources is kwctl's sources.yml.
	Sources string
	// Kubeconfig, when set, lets the policy read the cluster (--allow-context-aware).
	Kubeconfig string
	// Stderr receives the hosts' diagnostics (nil: discarded).
	Stderr io.Writer
}

func (o Options) args() []string {
	args := []string{"--sources-path", o.Sources}
	if o.Kubeconfig != "" {
		args = append(args, "--allow-context-aware")
	}
	return args
}

func (o Options) env() []string {
	env := os.Environ()
	env = append(env, "RUST_BACKTRACE=0")
	if o.Kubeconfig != "" {
		env = append(env, "KUBECONFIG="+o.Kubeconfig)
	}
	return env
}

// Embedded is `embedded-host serve` running the module.
type Embedded struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	closed bool
}

// StartEmbedded starts bin (the embedded host) serving the module.
func StartEmbedded(bin string, o Options) (*Embedded, error) {
	args := append([]string{"serve"}, o.args()...)
	cmd := exec.Command(bin, append(args, o.Module)...)
	cmd.Env = o.env()
	cmd.Stderr = o.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &Embedded{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// Name says which host this is.
func (e *Embedded) Name() string { return "embedded host" }

// Evaluate sends one request and reads its answer. Safe for concurrent use (one at a time).
func (e *Embedded) Evaluate(request []byte, settings any) (Response, error) {
	line, err := json.Marshal(map[string]any{"request": json.RawMessage(request), "settings": settings})
	if err != nil {
		return Response{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.in.Write(append(line, '\n')); err != nil {
		return Response{}, fmt.Errorf("embedded host: %w", err)
	}
	answer, err := e.out.ReadBytes('\n')
	if err != nil {
		return Response{}, fmt.Errorf("embedded host: %w", err)
	}
	var failure struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(answer, &failure); err == nil && failure.Error != nil {
		return Response{}, fmt.Errorf("%s", *failure.Error)
	}
	var response Response
	if err := json.Unmarshal(answer, &response); err != nil {
		return Response{}, fmt.Errorf("embedded host answered %q: %w", answer, err)
	}
	return response, nil
}

// Close stops the host.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	_ = e.in.Close()
	return e.cmd.Wait()
}

// Kwctl is Kubewarden's kwctl, one `kwctl run` per evaluation.
type Kwctl struct {
	bin string
	o   Options
	dir string
}

// NewKwctl runs bin (kwctl) with o; dir holds the request files.
func NewKwctl(bin, dir string, o Options) *Kwctl { return &Kwctl{bin: bin, o: o, dir: dir} }

// Name says which host this is.
func (k *Kwctl) Name() string { return "kwctl" }

// Evaluate runs `kwctl run` on the request.
func (k *Kwctl) Evaluate(request []byte, settings any) (Response, error) {
	file, err := os.CreateTemp(k.dir, "request-*.json")
	if err != nil {
		return Response{}, err
	}
	defer os.Remove(file.Name())
	if _, err := file.Write(request); err != nil {
		return Response{}, err
	}
	file.Close()
	settingsJSON, err := json.Marshal(settings)
	if err != nil {
		return Response{}, err
	}
	args := append([]string{"run", "--request-path", file.Name(), "--settings-json", string(settingsJSON)}, k.o.args()...)
	cmd := exec.Command(k.bin, append(args, k.o.Module)...)
	cmd.Env = k.o.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return Response{}, fmt.Errorf("%s", strings.TrimPrefix(lines[len(lines)-1], "Error: "))
	}
	var response Response
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err := json.Unmarshal(out, &response); err != nil {
		return Response{}, fmt.Errorf("kwctl printed %q: %w", stdout.String(), err)
	}
	return response, nil
}

// Close does nothing: each evaluation is its own process.
func (k *Kwctl) Close() error { return nil }

// Root is the repository's root, found from the working directory (k8s-judge/...).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "metadata.yml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no metadata.yml above the working directory")
		}
		dir = parent
	}
}
