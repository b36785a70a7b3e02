// Lists the keys a Talos release's strict config decoder accepts, from the
// yaml tags of its machinery Go types, for the key lists in
// src/talos/config/keys/ (read by hct and by hct-sim).
//
// Run it in a module that requires github.com/siderolabs/talos/pkg/machinery
// at the release (e.g. tests/talos-check/go.mod.tmpl filled in as
// scripts/ensure-peers does, with this file as its only .go file):
// `go run . > keys.txt`. For v1.11 drop the
// network documents (the release has none).
//
// Output: one line per key, `<document>.<path>`, `[]` for list items, and
// `{*}` after a map or a value with its own YAML decoder (anything below is
// taken as is).
package main

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/config/types/network"
	"github.com/siderolabs/talos/pkg/machinery/config/config"
	_ "github.com/siderolabs/talos/pkg/machinery/config/types"
)

var _ = configloader.NewFromBytes
var _ config.Document

func walk(t reflect.Type, prefix string, depth int, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		walk(t.Elem(), prefix+"[]", depth, seen)
		return
	case reflect.Map:
		fmt.Printf("%s{*}\n", prefix)
		return
	case reflect.Interface:
		fmt.Printf("%s{any}\n", prefix)
		return
	case reflect.Struct:
	default:
		return
	}
	if seen[t] || depth > 12 {
		fmt.Printf("%s{recursive %s}\n", prefix, t.Name())
		return
	}
	seen[t] = true
	defer delete(seen, t)
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name := strings.Split(tag, ",")[0]
		if tag == "" && f.Anonymous {
			walk(f.Type, prefix, depth, seen)
			continue
		}
		// `,inline` as an option, not a name that merely contains the word
		// (inlineManifests).
		if opts := strings.Split(tag, ",")[1:]; len(opts) > 0 && slices.Contains(opts, "inline") {
			walk(f.Type, prefix, depth, seen)
			continue
		}
		if name == "-" || name == "" || !f.IsExported() {
			continue
		}
		names = append(names, name)
		_, has := f.Type.MethodByName("UnmarshalYAML")
		pt := reflect.PointerTo(f.Type)
		_, has2 := pt.MethodByName("UnmarshalYAML")
		p := prefix + "." + name
		if has || has2 {
			fmt.Printf("%s{custom %s}\n", p, f.Type.String())
		} else {
			fmt.Printf("%s\n", p)
		}
		walk(f.Type, p, depth+1, seen)
	}
	sort.Strings(names)
}

func main() {
	walk(reflect.TypeOf(v1alpha1.Config{}), "v1alpha1", 0, map[reflect.Type]bool{})
	walk(reflect.TypeOf(network.LinkConfigV1Alpha1{}), "LinkConfig", 0, map[reflect.Type]bool{})
	walk(reflect.TypeOf(network.HostnameConfigV1Alpha1{}), "HostnameConfig", 0, map[reflect.Type]bool{})
	walk(reflect.TypeOf(network.DHCPv4ConfigV1Alpha1{}), "DHCPv4Config", 0, map[reflect.Type]bool{})
}