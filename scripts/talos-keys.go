// Lists the keys a Talos release's strict config decoder accepts, from the
// yaml tags of its machinery Go types, for the key lists in
// src/talos/config/keys/ (read by hct and by hct-sim).
//
// Run it in a module that requires github.com/siderolabs/talos/pkg/machinery
// at the release, with this file as its only .go file: tests/talos-check/
// go.mod.tmpl filled in as scripts/ensure-peers does (the release, the Go
// version and the replace directives of the release's go.mod). For a release
// the Go module proxy does not serve (v1.14.0-rc.1), require that version and
// add the replaces scripts/ensure-peers adds for it (LOCAL_MACHINERY: the
// module => the absolute path of ../shared/talos-machinery/<release>, and the
// two of ../shared/talos-machinery/NOTICE). Then
//
//	go mod tidy && go run . > src/talos/config/keys/vX.Y.txt
//
// lists the documents hct emits or checks (defaultKinds), or `go run . KIND...`
// only those. A kind the release does not know (the network documents before
// v1.12, the Kubernetes documents before v1.14) is left out, said on stderr.
//
// Output: a header naming the release (its gendata tag), then per document
// `[<kind>]` (v1alpha1 for the document without a kind) and one key path a
// line: `[]` for list items, and ` *` after a map, an any, or a value with
// its own YAML decoder (anything below is taken as is). A list type with its
// own decoder still has its items listed: Talos' unknown-key check
// (siderolabs/gen xyaml) walks a YAML sequence into the list's items whatever
// the list's decoder (cluster.inlineManifests).
package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/gendata"
)

// defaultKinds are the documents listed without arguments, in this order.
var defaultKinds = []string{
	"v1alpha1",
	"LinkConfig",
	"HostnameConfig",
	"DHCPv4Config",
	// What Talos v1.14 emits beside them (Kubernetes settings, discovery,
	// host DNS, volumes, security profile, the install).
	"KubeClusterConfig",
	"KubeNodeConfig",
	"KubeletConfig",
	"KubeNetworkConfig",
	"KubeAPIServerConfig",
	"KubeAPIServerCAConfig",
	"KubeAggregatorCAConfig",
	"KubeServiceAccountConfig",
	"KubeEtcdEncryptionConfig",
	"KubeControllerManagerConfig",
	"KubeSchedulerConfig",
	"KubeProxyConfig",
	"KubeAdmissionControlConfig",
	"KubeAuditPolicyConfig",
	"KubeAuthorizerConfig",
	"KubeAuthenticationConfig",
	"KubePrismConfig",
	"KubeInlineManifestConfig",
	"KubeCoreDNSConfig",
	"KubeFlannelCNIConfig",
	"DiscoveryIdentityConfig",
	"DiscoveryServiceConfig",
	"ResolverConfig",
	"VolumeConfig",
	"FilesystemTrimConfig",
	"SecurityProfileConfig",
	"UnattendedInstallConfig",
}

// documentType is the Go type Talos' config loader decodes a document of
// kind into (nil if the release does not know the kind): the type of what it
// returns for a document with nothing but its apiVersion and kind.
func documentType(kind string) (reflect.Type, error) {
	if kind == "v1alpha1" {
		return reflect.TypeOf(v1alpha1.Config{}), nil
	}

	provider, err := configloader.NewFromBytes([]byte("apiVersion: v1alpha1\nkind: " + kind + "\n"))
	if err != nil {
		if strings.Contains(err.Error(), "not registered") {
			return nil, nil
		}

		return nil, err
	}

	docs := provider.Documents()
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: the loader returned %d documents", kind, len(docs))
	}

	t := reflect.TypeOf(docs[0])
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	return t, nil
}

// lister collects one document's key paths.
type lister struct {
	lines []string
}

// open marks path as taking anything below: on its own line if it is the
// last one listed, else (a list's items) on a line of its own.
func (l *lister) open(path string) {
	if n := len(l.lines); n > 0 && l.lines[n-1] == path {
		l.lines[n-1] = path + " *"

		return
	}

	l.lines = append(l.lines, path+" *")
}

func hasDecoder(t reflect.Type) bool {
	_, own := t.MethodByName("UnmarshalYAML")
	_, viaPointer := reflect.PointerTo(t).MethodByName("UnmarshalYAML")

	return own || viaPointer
}

// value lists what is below path, a value of type t: a field's value
// (field), or a list's item.
func (l *lister) value(t reflect.Type, path string, field bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	if hasDecoder(t) && t.Kind() != reflect.Slice {
		// A list's item with its own decoder is not marked: a list without
		// an item listed takes any items.
		if field {
			l.open(path)
		}

		return
	}

	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		l.value(t.Elem(), path+"[]", false, seen)
	case reflect.Map, reflect.Interface:
		l.open(path)
	case reflect.Struct:
		if seen[t] {
			l.open(path)

			return
		}

		seen[t] = true
		defer delete(seen, t)

		l.fields(t, path, seen)
	default:
	}
}

// fields lists the keys of struct t, below path ("" at the top).
func (l *lister) fields(t reflect.Type, path string, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		parts := strings.Split(tag, ",")
		name := parts[0]

		// An embedded struct without a tag, or `,inline` as an option (not a
		// name that merely contains the word: inlineManifests): its keys are
		// the document's own.
		if (tag == "" && f.Anonymous) || slices.Contains(parts[1:], "inline") {
			l.value(f.Type, path, true, seen)

			continue
		}

		if name == "-" || name == "" || !f.IsExported() {
			continue
		}

		p := name
		if path != "" {
			p = path + "." + name
		}

		l.lines = append(l.lines, p)
		l.value(f.Type, p, true, seen)
	}
}

func main() {
	kinds := os.Args[1:]
	if len(kinds) == 0 {
		kinds = defaultKinds
	}

	release := strings.TrimSpace(gendata.VersionTag)

	fmt.Printf("# The keys Talos %s's strict decoder accepts, per document kind: one\n", release)
	fmt.Print(`# path a line ([] a list item, ' *' anything below: a map or a value
# with its own decoder). Listed from the machinery module's Go types
# (their yaml tags) with scripts/talos-keys.go.
`)

	for _, kind := range kinds {
		t, err := documentType(kind)
		if err != nil {
			fmt.Fprintf(os.Stderr, "talos-keys: %s: %v\n", kind, err)
			os.Exit(1)
		}

		if t == nil {
			fmt.Fprintf(os.Stderr, "talos-keys: Talos %s has no %s document: left out\n", release, kind)

			continue
		}

		var l lister

		l.fields(t, "", map[reflect.Type]bool{t: true})

		fmt.Printf("[%s]\n", kind)

		for _, line := range l.lines {
			fmt.Println(line)
		}
	}
}
