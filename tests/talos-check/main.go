// talos-check: Talos' own config validation (pkg/machinery), for hct's tests.
//
// scripts/ensure-peers builds this file once per Talos machinery release
// (one generated module per release, from go.mod.tmpl; a release the Go
// module proxy does not serve from its source directory, through a replace),
// so that hct's machine configs are judged by the same code as the Talos
// release that will run them.
//
//	talos-check version
//	talos-check validate [-mode cloud|metal|container] [-strict=true] [-json] FILE...
//	talos-check client -talosconfig FILE -proxy socks5://127.0.0.1:PORT [-nodes IP,...]
//	  (Version, ServiceList and the config of each node; etcd members, the
//	  kubeconfig and the bootstrap manifests of the first)
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"golang.org/x/net/proxy"
	"google.golang.org/grpc"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"
	"github.com/siderolabs/talos/pkg/machinery/gendata"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

const machineryModule = "github.com/siderolabs/talos/pkg/machinery"

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  talos-check version
      the Talos machinery release this binary was built with
  talos-check validate [-mode cloud|metal|container] [-strict=true] [-json] FILE...
      load each machine config (multi-document YAML) with Talos' config loader
      and validate it as Talos does; exit 1 if any file is invalid
  talos-check client -talosconfig FILE -proxy socks5://127.0.0.1:PORT [-nodes IP,...]
      call Version, EtcdMemberList, Read(/system/state/config.yaml),
      ServiceList and Kubeconfig through a SOCKS5 proxy
`)
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}

	var err error

	switch os.Args[1] {
	case "version":
		fmt.Println("machinery", machineryVersion())
	case "validate":
		err = validateCommand(os.Args[2:])
	case "client":
		err = clientCommand(os.Args[2:])
	case "help", "-h", "-help", "--help":
		usage(os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "talos-check: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}

	var exit exitError
	if errors.As(err, &exit) {
		os.Exit(int(exit))
	}

	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "talos-check:", err)
		}

		os.Exit(2)
	}
}

// exitError asks main for that exit code, the reason having been printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// machineryVersion is the version of Talos' machinery module linked in. A
// module replaced by a source directory (a release the Go module proxy does
// not serve, see scripts/ensure-peers) has no version in the build info
// ("(devel)", or none): then it is the release tag the source itself carries
// (gendata/data/tag, what Talos' version package reports).
func machineryVersion() string {
	version := ""

	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == machineryModule {
				version = dep.Version
				if dep.Replace != nil {
					version = dep.Replace.Version
				}

				break
			}
		}
	}

	if version == "" || version == "(devel)" {
		version = strings.TrimSpace(gendata.VersionTag)
	}

	if version == "" {
		return "unknown"
	}

	return version
}

// runtimeMode is validation.RuntimeMode as Talos' machined reports it
// (internal/app/machined/pkg/runtime/mode.go): only metal requires an install
// section, only container is in a container. Hetzner Cloud images run in
// cloud mode.
type runtimeMode string

func (m runtimeMode) String() string        { return string(m) }
func (m runtimeMode) RequiresInstall() bool { return m == "metal" }
func (m runtimeMode) InContainer() bool     { return m == "container" }

var _ validation.RuntimeMode = runtimeMode("cloud")

// docReport is one document's own Validate result.
type docReport struct {
	Kind        string   `json:"kind"`
	Name        string   `json:"name,omitempty"`
	APIVersion  string   `json:"apiVersion,omitempty"`
	Validatable bool     `json:"validatable"`
	Error       string   `json:"error,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
}

// fileReport is the verdict on one file.
type fileReport struct {
	File      string      `json:"file"`
	Machinery string      `json:"machinery"`
	Mode      string      `json:"mode"`
	Strict    bool        `json:"strict"`
	Valid     bool        `json:"valid"`
	LoadError string      `json:"loadError,omitempty"`
	Error     string      `json:"error,omitempty"`
	Errors    []string    `json:"errors,omitempty"`
	Warnings  []string    `json:"warnings,omitempty"`
	Documents []docReport `json:"documents,omitempty"`
}

func validateCommand(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	mode := fs.String("mode", "cloud", "runtime mode to validate for: cloud, metal or container")
	strict := fs.Bool("strict", true, "validation.WithStrict(): Talos' warnings are errors")
	asJSON := fs.Bool("json", false, "print one JSON object per file instead of text")

	if err := fs.Parse(args); err != nil {
		return err
	}

	switch *mode {
	case "cloud", "metal", "container":
	default:
		return fmt.Errorf("unknown mode %q (cloud, metal or container)", *mode)
	}

	if fs.NArg() == 0 {
		return errors.New("validate: no FILE given")
	}

	invalid := 0

	for _, file := range fs.Args() {
		report := validateFile(file, runtimeMode(*mode), *strict)
		if !report.Valid {
			invalid++
		}

		if *asJSON {
			line, err := json.Marshal(report)
			if err != nil {
				return err
			}

			fmt.Println(string(line))
		} else {
			printReport(os.Stdout, &report)
		}
	}

	if invalid > 0 {
		return exitError(1)
	}

	return nil
}

// validateFile loads file with Talos' config loader (which decodes every
// document strictly: unknown fields and unknown kinds are errors), then runs
// each document's own Validate and the whole config's Validate, which adds
// Talos' cross-document checks. The verdict is the whole config's.
func validateFile(file string, mode runtimeMode, strict bool) fileReport {
	report := fileReport{File: file, Machinery: machineryVersion(), Mode: mode.String(), Strict: strict}

	provider, err := configloader.NewFromFile(file)
	if err != nil {
		report.LoadError = err.Error()

		return report
	}

	var opts []validation.Option
	if strict {
		opts = append(opts, validation.WithStrict())
	}

	for _, doc := range provider.Documents() {
		d := docReport{Kind: doc.Kind(), APIVersion: doc.APIVersion()}
		if named, ok := doc.(config.NamedDocument); ok {
			d.Name = named.Name()
		}

		if validator, ok := doc.(config.Validator); ok {
			d.Validatable = true

			warnings, err := validator.Validate(mode, opts...)
			d.Warnings = warnings

			if err != nil {
				d.Error = err.Error()
			}
		}

		report.Documents = append(report.Documents, d)
	}

	// Warnings come from a pass without WithStrict (which turns them into
	// errors), so that they are reported either way.
	report.Warnings, _ = provider.Validate(mode)

	_, err = provider.Validate(mode, opts...)
	if err != nil {
		report.Error = err.Error()
		report.Errors = flatten(err)
	}

	report.Valid = err == nil

	for _, d := range report.Documents {
		if d.Error != "" {
			report.Valid = false
		}
	}

	if !report.Valid && report.Error == "" {
		report.Error = "a document failed its own Validate (see documents)"
	}

	return report
}

// flatten lists the errors of a multierror (hashicorp/go-multierror, or an
// errors.Join), each as Talos words it.
func flatten(err error) []string {
	switch e := err.(type) {
	case interface{ WrappedErrors() []error }:
		var out []string
		for _, inner := range e.WrappedErrors() {
			out = append(out, inner.Error())
		}

		return out
	case interface{ Unwrap() []error }:
		var out []string
		for _, inner := range e.Unwrap() {
			out = append(out, inner.Error())
		}

		return out
	default:
		return []string{err.Error()}
	}
}

func printReport(w io.Writer, r *fileReport) {
	if r.LoadError != "" {
		fmt.Fprintf(w, "%s: INVALID (machinery %s): cannot load: %s\n", r.File, r.Machinery, r.LoadError)

		return
	}

	verdict := "valid"
	if !r.Valid {
		verdict = "INVALID"
	}

	plural := "s"
	if len(r.Documents) == 1 {
		plural = ""
	}

	fmt.Fprintf(w, "%s: %s for %s mode (machinery %s, strict=%t), %d document%s\n",
		r.File, verdict, r.Mode, r.Machinery, r.Strict, len(r.Documents), plural)

	for _, d := range r.Documents {
		id := d.Kind
		if d.Name != "" {
			id += "/" + d.Name
		}

		switch {
		case !d.Validatable:
			fmt.Fprintf(w, "  %s: loaded (no Validate method)\n", id)
		case d.Error != "":
			fmt.Fprintf(w, "  %s: INVALID: %s\n", id, indent(d.Error))
		default:
			fmt.Fprintf(w, "  %s: ok\n", id)
		}
	}

	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", indent(warning))
	}

	if !r.Valid {
		fmt.Fprintf(w, "  error: %s\n", indent(r.Error))
	}
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// clientCommand talks to Talos nodes with machinery's own client, through a
// SOCKS5 proxy (as hct reaches private-only nodes). It prints what it got,
// but of the machine config and the kubeconfig only their size, digest and
// shape: both hold credentials.
func clientCommand(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	talosconfig := fs.String("talosconfig", "", "talosconfig file (required)")
	proxyFlag := fs.String("proxy", "", "SOCKS5 proxy URL, socks5://127.0.0.1:PORT (required)")
	contextFlag := fs.String("context", "", "talosconfig context (default: its current one)")
	nodesFlag := fs.String("nodes", "", "comma-separated nodes (default: the context's nodes, else its endpoints)")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline for all calls")

	if err := fs.Parse(args); err != nil {
		return err
	}

	if *talosconfig == "" || *proxyFlag == "" || fs.NArg() > 0 {
		return errors.New("client: -talosconfig and -proxy are required, and nothing else")
	}

	raw, err := os.ReadFile(*talosconfig)
	if err != nil {
		return err
	}

	cfg, err := clientconfig.FromString(string(raw))
	if err != nil {
		return fmt.Errorf("talosconfig: %w", err)
	}

	contextName := cfg.Context
	if *contextFlag != "" {
		contextName = *contextFlag
	}

	cfgContext, ok := cfg.Contexts[contextName]
	if !ok {
		return fmt.Errorf("talosconfig has no context %q", contextName)
	}

	nodes := cfgContext.Nodes
	if *nodesFlag != "" {
		nodes = strings.Split(*nodesFlag, ",")
	}

	if len(nodes) == 0 {
		nodes = cfgContext.Endpoints
	}

	if len(nodes) == 0 {
		return errors.New("no nodes: the context has neither nodes nor endpoints, and -nodes is empty")
	}

	dial, err := socks5Dialer(*proxyFlag)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	c, err := client.New(ctx,
		client.WithConfig(cfg),
		client.WithContextName(contextName),
		client.WithGRPCDialOptions(grpc.WithContextDialer(dial)),
	)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	defer c.Close() //nolint:errcheck

	failed := 0
	report := func(node, call string, err error) {
		if err != nil {
			failed++
			fmt.Printf("%s %s: ERROR: %v\n", node, call, err)
		}
	}

	for _, node := range nodes {
		nodeCtx := client.WithNode(ctx, node)

		version, err := c.Version(nodeCtx)
		report(node, "Version", err)

		if err == nil {
			for _, m := range version.GetMessages() {
				v := m.GetVersion()
				fmt.Printf("%s Version: %s (%s/%s, %s) platform %s\n", node, v.GetTag(), v.GetOs(), v.GetArch(),
					v.GetGoVersion(), m.GetPlatform().GetName())
			}
		}

		services, err := c.ServiceList(nodeCtx)
		report(node, "ServiceList", err)

		if err == nil {
			for _, m := range services.GetMessages() {
				for _, svc := range m.GetServices() {
					fmt.Printf("%s ServiceList: %s %s healthy=%t\n", node, svc.GetId(), svc.GetState(),
						svc.GetHealth().GetHealthy())
				}
			}
		}

		config, err := readAll(nodeCtx, c, "/system/state/config.yaml")
		report(node, "Read /system/state/config.yaml", err)

		if err == nil {
			fmt.Printf("%s Read /system/state/config.yaml: %d bytes, sha256 %x, documents %s\n", node, len(config),
				sha256.Sum256(config), strings.Join(documentKinds(config), ","))
		}
	}

	// etcd and the kubeconfig are the control plane's: ask the first node.
	first := client.WithNode(ctx, nodes[0])

	members, err := c.EtcdMemberList(first, &machineapi.EtcdMemberListRequest{})
	report(nodes[0], "EtcdMemberList", err)

	if err == nil {
		for _, m := range members.GetMessages() {
			for _, member := range m.GetMembers() {
				fmt.Printf("%s EtcdMemberList: %s id %x peers %s learner=%t\n", nodes[0], member.GetHostname(),
					member.GetId(), strings.Join(member.GetPeerUrls(), ","), member.GetIsLearner())
			}
		}
	}

	kubeconfig, err := c.Kubeconfig(first)
	report(nodes[0], "Kubeconfig", err)

	if err == nil {
		fmt.Printf("%s Kubeconfig: %d bytes, sha256 %x, servers %s\n", nodes[0], len(kubeconfig),
			sha256.Sum256(kubeconfig), strings.Join(yamlValues(kubeconfig, "server"), ","))
	}

	// The bootstrap manifests the first node renders, as talosctl
	// upgrade-k8s reads them (COSI state API, decoded by machinery's types).
	manifests, err := safe.StateListAll[*k8s.Manifest](first, c.COSI)
	report(nodes[0], "List Manifests", err)

	if err == nil {
		for i := range manifests.Len() {
			m := manifests.Get(i)
			objects := make([]string, 0, len(m.TypedSpec().Items))

			for _, item := range m.TypedSpec().Items {
				meta, _ := item.Object["metadata"].(map[string]any) //nolint:errcheck
				objects = append(objects, fmt.Sprintf("%v/%v", item.Object["kind"], meta["name"]))
			}

			fmt.Printf("%s Manifest: %s %s\n", nodes[0], m.Metadata().ID(), strings.Join(objects, ","))
		}
	}

	if failed > 0 {
		fmt.Printf("client: %d calls failed\n", failed)

		return exitError(1)
	}

	return nil
}

// socks5Dialer dials every connection through the SOCKS5 proxy at rawURL,
// which names the target by the address gRPC gives (the proxy resolves it).
func socks5Dialer(rawURL string) (func(context.Context, string) (net.Conn, error), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-proxy: %w", err)
	}

	if u.Scheme != "socks5" && u.Scheme != "socks5h" {
		return nil, fmt.Errorf("-proxy: %q is not a socks5:// URL", rawURL)
	}

	d, err := proxy.FromURL(u, proxy.Direct)
	if err != nil {
		return nil, fmt.Errorf("-proxy: %w", err)
	}

	cd, ok := d.(proxy.ContextDialer)
	if !ok {
		return nil, errors.New("-proxy: the SOCKS5 dialer cannot take a context")
	}

	return func(ctx context.Context, addr string) (net.Conn, error) {
		return cd.DialContext(ctx, "tcp", addr)
	}, nil
}

func readAll(ctx context.Context, c *client.Client, path string) ([]byte, error) {
	r, err := c.Read(ctx, path)
	if err != nil {
		return nil, err
	}

	data, err := io.ReadAll(r)
	if closeErr := r.Close(); err == nil {
		err = closeErr
	}

	return data, err
}

// documentKinds names the documents of a multi-document machine config
// (v1alpha1 for the one without a kind), from their top-level keys alone.
func documentKinds(config []byte) []string {
	var kinds []string

	for _, doc := range strings.Split("\n"+string(config), "\n---") {
		kind := ""

		for _, line := range strings.Split(doc, "\n") {
			if rest, ok := strings.CutPrefix(line, "kind: "); ok {
				kind = strings.TrimSpace(rest)
			} else if kind == "" && strings.HasPrefix(line, "version: v1alpha1") {
				kind = "v1alpha1"
			}
		}

		if kind != "" {
			kinds = append(kinds, kind)
		}
	}

	return kinds
}

// yamlValues finds the values of key at any depth, for plain one-line values.
func yamlValues(text []byte, key string) []string {
	var out []string

	for _, line := range strings.Split(string(text), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(line, " -"), key+": "); ok {
			out = append(out, strings.Trim(strings.TrimSpace(rest), `"'`))
		}
	}

	return out
}
