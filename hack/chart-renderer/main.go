// chart-renderer renders a Helm chart the way `helm template --include-crds` does, for machines
// where helm itself cannot be installed. It uses the same building blocks as Helm 3: Go's
// text/template, sprig (Debian's golang-github-masterminds-sprig-dev) and sigs.k8s.io/yaml
// (golang-k8s-sigs-yaml-dev), and re-implements the parts of Helm's engine a chart sees:
//
//   - the top-level objects .Values, .Release (Name, Namespace, Service, IsInstall, IsUpgrade,
//     Revision), .Chart (Chart.yaml, Helm's field names), .Capabilities (KubeVersion,
//     APIVersions.Has), .Template (Name, BasePath) and .Files (Get, GetBytes);
//   - Helm's functions include, tpl, required, toYaml, fromYaml, toJson, fromJson, lookup, and
//     sprig's functions minus env/expandenv (Helm removes them). lookup answers from the objects
//     in --lookup-objects files (what `helm install/upgrade` would read from the cluster), empty
//     without them (as in `helm template`);
//   - values: values.yaml, then -f files merged in order, then every --set, then every
//     --set-string (Helm's order: all --set before all --set-string, whatever the command line's
//     order; Helm's strvals syntax: dotted keys, [i] indexes, {a,b} lists, backslash escapes, typed
//     scalars), then coalesced over the chart's defaults, where null deletes a default;
//   - values.schema.json: the coalesced values are validated against it with gojsonschema (the
//     library and JSON Schema draft Helm 3 uses); a failure names each offending path, in Helm's
//     words, and nothing is rendered;
//   - checks: Chart.yaml's apiVersion, name, SemVer version and kubeVersion constraint, the release
//     name, and that every rendered document is YAML;
//   - templates/NOTES.txt is rendered with every other template (an error in it fails the render,
//     as in `helm install`) and printed instead of the manifests with --notes-only;
//   - output: CRDs from crds/ first (raw file contents), then every rendered document, split on
//     "---", empty ones dropped, sorted by Helm's install order of kinds, each as
//     "---\n# Source: <chart>/templates/<file>\n<document>\n". "<no value>" renders as "".
//
// Not supported (the berth chart uses none of them): subcharts and dependencies, hooks (a
// document with a helm.sh/hook annotation is an error, not silently rendered), .helmignore,
// lookup against a live cluster, --set-file and --set-json.
//
// Usage: chart-renderer [flags] CHART_DIR RELEASE NAMESPACE
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

// ---- Chart.yaml -------------------------------------------------------------------------------

type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Metadata mirrors helm.sh/helm/v3/pkg/chart.Metadata, so templates see the same field names.
type Metadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []*Maintainer     `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Type         string            `json:"type,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
}

type Release struct {
	Name      string
	Namespace string
	IsUpgrade bool
	IsInstall bool
	Revision  int
	Service   string
}

type KubeVersion struct {
	Version    string
	Major      string
	Minor      string
	GitVersion string
}

func (kv KubeVersion) String() string { return kv.Version }

type VersionSet []string

func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

type TemplateInfo struct {
	Name     string
	BasePath string
}

// Files gives templates the chart's non-template files, as Helm's .Files does.
type Files map[string][]byte

func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Get(name string) string      { return string(f[name]) }

// The API versions `helm template` assumes without a cluster (Kubernetes 1.20's built-ins).
var defaultAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", "apiregistration.k8s.io/v1",
	"apps/v1", "authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1",
	"autoscaling/v2beta1", "autoscaling/v2beta2", "batch/v1", "batch/v1beta1",
	"certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1beta1",
	"events.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1", "policy/v1beta1",
	"rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

// ---- flags --------------------------------------------------------------------------------------

type options struct {
	chartDir, release, namespace string
	valueFiles                   []string
	sets                         []setFlag
	kubeVersion                  string
	apiVersions                  []string
	includeCRDs                  bool
	isUpgrade                    bool
	lookupFiles                  []string
	notesOnly                    bool
}

type setFlag struct {
	expr     string
	asString bool
}

const usage = `usage: chart-renderer [flags] CHART_DIR RELEASE NAMESPACE
  -f, --values FILE          values file (repeatable; later files win)
  --set k=v[,k2=v2]          set values (Helm's --set syntax, repeatable)
  --set-string k=v           set values as strings (repeatable)
  --kube-version V           .Capabilities.KubeVersion (default v1.20.0)
  --api-versions G/V         add to .Capabilities.APIVersions (repeatable)
  --skip-crds                do not print the chart's crds/ (printed first by default)
  --is-upgrade               .Release.IsUpgrade true, .Release.IsInstall false (as helm template)
  --lookup-objects FILE      objects (multi-document YAML, or a List) that lookup finds, as if
                             they were in the cluster (repeatable)
  --notes-only               print the rendered templates/NOTES.txt instead of the manifests
`

func parseArgs(args []string) (*options, error) {
	o := &options{kubeVersion: "v1.20.0", includeCRDs: true}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := a, "", false
		if strings.HasPrefix(a, "--") {
			if eq := strings.IndexByte(a, '='); eq >= 0 {
				name, value, hasValue = a[:eq], a[eq+1:], true
			}
		}
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		switch name {
		case "-f", "--values":
			v, err = takeValue()
			o.valueFiles = append(o.valueFiles, v)
		case "--set":
			v, err = takeValue()
			o.sets = append(o.sets, setFlag{v, false})
		case "--set-string":
			v, err = takeValue()
			o.sets = append(o.sets, setFlag{v, true})
		case "--kube-version":
			o.kubeVersion, err = takeValue()
		case "--api-versions", "-a":
			v, err = takeValue()
			o.apiVersions = append(o.apiVersions, strings.Split(v, ",")...)
		case "--skip-crds":
			o.includeCRDs = false
		case "--is-upgrade":
			o.isUpgrade = true
		case "--lookup-objects":
			v, err = takeValue()
			o.lookupFiles = append(o.lookupFiles, v)
		case "--notes-only":
			o.notesOnly = true
		case "--include-crds":
			o.includeCRDs = true
		case "-h", "--help":
			fmt.Print(usage)
			os.Exit(0)
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("unknown flag %s\n%s", a, usage)
			}
			positional = append(positional, a)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(positional) != 3 {
		return nil, fmt.Errorf("expected CHART_DIR RELEASE NAMESPACE, got %d arguments\n%s", len(positional), usage)
	}
	o.chartDir, o.release, o.namespace = positional[0], positional[1], positional[2]
	return o, nil
}

// ---- values -------------------------------------------------------------------------------------

func readValuesFile(p string) (map[string]interface{}, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	vals := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", p, err)
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

// mergeMaps is Helm's merge of -f files: maps merge recursively, anything else is replaced.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k]; ok {
				if bvm, ok := bv.(map[string]interface{}); ok {
					out[k] = mergeMaps(bvm, vm)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// coalesce puts the chart's defaults under the user's values: user values win, a user null
// deletes the default, maps merge recursively (chartutil.CoalesceValues).
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	if user == nil {
		user = map[string]interface{}{}
	}
	for k, dv := range defaults {
		uv, present := user[k]
		if !present {
			user[k] = deepCopy(dv)
			continue
		}
		if uv == nil {
			delete(user, k)
			continue
		}
		um, uok := uv.(map[string]interface{})
		dm, dok := dv.(map[string]interface{})
		if uok && dok {
			user[k] = coalesce(um, dm)
		} else if uok != dok && dv != nil {
			fmt.Fprintf(os.Stderr, "coalesce.go: warning: cannot overwrite table with non table for %s (%v)\n", k, dv)
		}
	}
	// A null that has no default to delete disappears too.
	for k, v := range user {
		if v == nil {
			delete(user, k)
		}
	}
	return user
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

// ---- --set (Helm's strvals) -----------------------------------------------------------------------

// typedVal is strvals.typedVal: true/false/null/integers are typed unless --set-string.
func typedVal(s string, asString bool) interface{} {
	if asString {
		return s
	}
	switch {
	case strings.EqualFold(s, "true"):
		return true
	case strings.EqualFold(s, "false"):
		return false
	case strings.EqualFold(s, "null"):
		return nil
	case s == "0":
		return int64(0)
	}
	if len(s) > 0 && s[0] != '0' {
		if iv, err := strconv.ParseInt(s, 10, 64); err == nil {
			return iv
		}
	}
	return s
}

type setParser struct {
	in       []rune
	pos      int
	asString bool
}

// readUntil reads up to (not including) one of stops, honouring backslash escapes; returns the
// text and the stop rune (0 at end of input).
func (p *setParser) readUntil(stops string) (string, rune) {
	var b strings.Builder
	for p.pos < len(p.in) {
		r := p.in[p.pos]
		if r == '\\' && p.pos+1 < len(p.in) {
			b.WriteRune(p.in[p.pos+1])
			p.pos += 2
			continue
		}
		if strings.ContainsRune(stops, r) {
			p.pos++
			return b.String(), r
		}
		b.WriteRune(r)
		p.pos++
	}
	return b.String(), 0
}

// parseSet applies one --set argument (possibly several comma-separated assignments) to vals.
func parseSet(expr string, asString bool, vals map[string]interface{}) error {
	p := &setParser{in: []rune(expr), asString: asString}
	for p.pos < len(p.in) {
		if err := p.assignment(vals); err != nil {
			return fmt.Errorf("failed parsing --set data %q: %w", expr, err)
		}
	}
	return nil
}

type pathElem struct {
	key   string
	index int // >= 0 for a list index
}

func (p *setParser) assignment(vals map[string]interface{}) error {
	var elems []pathElem
	for {
		key, stop := p.readUntil(".=[,")
		switch stop {
		case '.':
			elems = append(elems, pathElem{key, -1})
			continue
		case '[':
			if key != "" {
				elems = append(elems, pathElem{key, -1})
			}
			idx, s2 := p.readUntil("]")
			if s2 != ']' {
				return errors.New("unterminated [ index")
			}
			i, err := strconv.Atoi(idx)
			if err != nil || i < 0 {
				return fmt.Errorf("bad index %q", idx)
			}
			if i > 65536 {
				return fmt.Errorf("index of %d is greater than maximum supported index of 65536", i)
			}
			elems = append(elems, pathElem{"", i})
			// After ] comes '.', '[', or '='.
			if p.pos < len(p.in) && p.in[p.pos] == '.' {
				p.pos++
			}
			continue
		case '=':
			if key != "" {
				elems = append(elems, pathElem{key, -1})
			}
			var value interface{}
			if p.pos < len(p.in) && p.in[p.pos] == '{' {
				p.pos++
				var list []interface{}
				for {
					item, s := p.readUntil(",}")
					if s == 0 {
						return errors.New("list must terminate with '}'")
					}
					list = append(list, typedVal(item, p.asString))
					if s == '}' {
						break
					}
				}
				if p.pos < len(p.in) {
					if p.in[p.pos] != ',' {
						return fmt.Errorf("unexpected %q after list", p.in[p.pos])
					}
					p.pos++
				}
				value = list
			} else {
				v, _ := p.readUntil(",")
				value = typedVal(v, p.asString)
			}
			return setPath(vals, elems, value)
		default: // ',' or end of input without '='
			return fmt.Errorf("key %q has no value", strings.TrimSpace(key))
		}
	}
}

func setPath(vals map[string]interface{}, elems []pathElem, value interface{}) error {
	if len(elems) == 0 {
		return errors.New("empty key")
	}
	var set func(cur interface{}, i int) (interface{}, error)
	set = func(cur interface{}, i int) (interface{}, error) {
		if i == len(elems) {
			return value, nil
		}
		e := elems[i]
		if e.index >= 0 {
			list, _ := cur.([]interface{})
			for len(list) <= e.index {
				list = append(list, nil)
			}
			v, err := set(list[e.index], i+1)
			if err != nil {
				return nil, err
			}
			list[e.index] = v
			return list, nil
		}
		if e.key == "" {
			return nil, errors.New("empty key")
		}
		m, ok := cur.(map[string]interface{})
		if !ok {
			m = map[string]interface{}{}
		}
		v, err := set(m[e.key], i+1)
		if err != nil {
			return nil, err
		}
		m[e.key] = v
		return m, nil
	}
	e := elems[0]
	if e.index >= 0 {
		return errors.New("a key must come before an index")
	}
	v, err := set(vals[e.key], 1)
	if err != nil {
		return err
	}
	vals[e.key] = v
	return nil
}

// ---- template functions ---------------------------------------------------------------------------

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	a := []interface{}{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	a := []interface{}{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func required(msg string, v interface{}) (interface{}, error) {
	if v == nil {
		return v, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return v, errors.New(msg)
	}
	return v, nil
}

// ---- lookup ------------------------------------------------------------------------------------------

// readLookupObjects reads the objects lookup finds: multi-document YAML files (a rendered chart,
// `kubectl get -o yaml` output); a *List document contributes its items.
func readLookupObjects(files []string) ([]map[string]interface{}, error) {
	var out []map[string]interface{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, d := range sep.Split(string(data), -1) {
			if strings.TrimSpace(d) == "" {
				continue
			}
			obj := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
				return nil, fmt.Errorf("--lookup-objects %s: %w", f, err)
			}
			if len(obj) == 0 {
				continue
			}
			if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") {
				items, _ := obj["items"].([]interface{})
				for _, it := range items {
					if m, ok := it.(map[string]interface{}); ok {
						out = append(out, m)
					}
				}
				continue
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

func metaString(obj map[string]interface{}, key string) string {
	m, _ := obj["metadata"].(map[string]interface{})
	s, _ := m[key].(string)
	return s
}

// lookup is Helm's: the object as a map (empty when there is none), or with an empty name a list
// object whose items are every match. A namespace of "" lists across namespaces; an object
// without a namespace (cluster-scoped) matches whatever namespace is asked.
func lookup(objects []map[string]interface{}) func(string, string, string, string) (map[string]interface{}, error) {
	return func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		var items []interface{}
		for _, obj := range objects {
			if obj["apiVersion"] != apiVersion || obj["kind"] != kind {
				continue
			}
			ns := metaString(obj, "namespace")
			if ns != "" && namespace != "" && ns != namespace {
				continue
			}
			if name == "" {
				items = append(items, deepCopy(obj))
				continue
			}
			if metaString(obj, "name") == name && (ns == namespace || ns == "") {
				return deepCopy(obj).(map[string]interface{}), nil
			}
		}
		if name != "" {
			return map[string]interface{}{}, nil
		}
		if items == nil {
			items = []interface{}{}
		}
		return map[string]interface{}{"apiVersion": apiVersion, "kind": kind + "List",
			"metadata": map[string]interface{}{}, "items": items}, nil
	}
}

// ---- values.schema.json -----------------------------------------------------------------------------

// validateSchema is chartutil.ValidateAgainstSchema of Helm 3: the values as JSON against the
// chart's values.schema.json with gojsonschema, every error as "- path: description".
func validateSchema(chartName string, schema []byte, values map[string]interface{}) error {
	valuesJSON, err := json.Marshal(values)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	if result.Valid() {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("values don't meet the specifications of the schema(s) in the following chart(s):\n")
	sb.WriteString(chartName + ":\n")
	for _, desc := range result.Errors() {
		sb.WriteString(fmt.Sprintf("- %s\n", desc))
	}
	return errors.New(strings.TrimSuffix(sb.String(), "\n"))
}

const recursionMaxNums = 1000

type engine struct {
	t        *template.Template
	depth    map[string]int
	tplCount int
	objects  []map[string]interface{}
}

func (e *engine) funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	extra := template.FuncMap{
		"toYaml":        toYAML,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		"required":      required,
		"lookup":        lookup(e.objects),
		"include": func(name string, data interface{}) (string, error) {
			if e.depth[name] > recursionMaxNums {
				return "", fmt.Errorf("rendering template has a nested reference name: %s: unable to execute template", name)
			}
			e.depth[name]++
			defer func() { e.depth[name]-- }()
			var buf bytes.Buffer
			if err := e.t.ExecuteTemplate(&buf, name, data); err != nil {
				return "", err
			}
			return buf.String(), nil
		},
		"tpl": func(text string, data interface{}) (string, error) {
			e.tplCount++
			name := fmt.Sprintf("tpl-%d", e.tplCount)
			nt, err := e.t.New(name).Parse(text)
			if err != nil {
				return "", fmt.Errorf("cannot parse template %q: %w", text, err)
			}
			var buf bytes.Buffer
			if err := nt.Execute(&buf, data); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

// ---- manifests ----------------------------------------------------------------------------------------

// installOrder is Helm's releaseutil.InstallOrder.
var installOrder = []string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

type manifest struct {
	source  string
	content string
	kind    string
}

var sep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

func splitManifests(source, rendered string) ([]manifest, error) {
	var out []manifest
	for _, d := range sep.Split(rendered, -1) {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &head); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %w", source, err)
		}
		if _, hook := head.Metadata.Annotations["helm.sh/hook"]; hook {
			return nil, fmt.Errorf("%s: %s %q is a Helm hook, which this renderer does not support", source, head.Kind, head.Metadata.Name)
		}
		out = append(out, manifest{source: source, content: d, kind: head.Kind})
	}
	return out, nil
}

func sortByKind(ms []manifest) {
	order := map[string]int{}
	for i, k := range installOrder {
		order[k] = i
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, aok := order[ms[i].kind]
		b, bok := order[ms[j].kind]
		switch {
		case !aok && !bok:
			return ms[i].kind < ms[j].kind
		case !aok:
			return false
		case !bok:
			return true
		}
		return a < b
	})
}

// ---- main -------------------------------------------------------------------------------------------------

func run(o *options) error {
	chartDir := filepath.Clean(o.chartDir)
	chartYAML, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("%s is not a chart: %w", o.chartDir, err)
	}
	var meta Metadata
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		return fmt.Errorf("cannot parse Chart.yaml: %w", err)
	}
	switch {
	case meta.APIVersion == "":
		return errors.New("validation: chart.metadata.apiVersion is required")
	case meta.APIVersion != "v2" && meta.APIVersion != "v1":
		return fmt.Errorf("validation: chart.metadata.apiVersion %q is not valid", meta.APIVersion)
	case meta.Name == "":
		return errors.New("validation: chart.metadata.name is required")
	case meta.Version == "":
		return errors.New("validation: chart.metadata.version is required")
	}
	if _, err := semver.StrictNewVersion(meta.Version); err != nil {
		return fmt.Errorf("validation: chart.metadata.version %q is invalid", meta.Version)
	}
	if meta.Type != "" && meta.Type != "application" {
		return fmt.Errorf("chart type %q cannot be rendered", meta.Type)
	}
	if ok, _ := regexp.MatchString(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, o.release); !ok || len(o.release) > 53 {
		return fmt.Errorf("release name %q is invalid (DNS-1123 subdomain, at most 53 characters)", o.release)
	}

	defaults := map[string]interface{}{}
	if _, err := os.Stat(filepath.Join(chartDir, "values.yaml")); err == nil {
		if defaults, err = readValuesFile(filepath.Join(chartDir, "values.yaml")); err != nil {
			return err
		}
	}
	user := map[string]interface{}{}
	for _, f := range o.valueFiles {
		v, err := readValuesFile(f)
		if err != nil {
			return err
		}
		user = mergeMaps(user, v)
	}
	// Helm applies every --set, then every --set-string (pkg/cli/values.Options.MergeValues).
	for _, asString := range []bool{false, true} {
		for _, s := range o.sets {
			if s.asString != asString {
				continue
			}
			if err := parseSet(s.expr, s.asString, user); err != nil {
				return err
			}
		}
	}
	values := coalesce(user, defaults)
	if schema, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json")); err == nil {
		if err := validateSchema(meta.Name, schema, values); err != nil {
			return err
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	objects, err := readLookupObjects(o.lookupFiles)
	if err != nil {
		return err
	}

	kv, err := semver.NewVersion(o.kubeVersion)
	if err != nil {
		return fmt.Errorf("invalid --kube-version %q: %w", o.kubeVersion, err)
	}
	if meta.KubeVersion != "" {
		c, err := semver.NewConstraint(meta.KubeVersion)
		if err != nil {
			return fmt.Errorf("Chart.yaml kubeVersion %q is not a version constraint: %w", meta.KubeVersion, err)
		}
		if !c.Check(kv) {
			return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes v%s", meta.KubeVersion, kv.String())
		}
	}
	caps := Capabilities{
		KubeVersion: KubeVersion{Version: "v" + kv.String(), Major: strconv.FormatUint(kv.Major(), 10),
			Minor: strconv.FormatUint(kv.Minor(), 10), GitVersion: "v" + kv.String()},
		APIVersions: append(VersionSet(defaultAPIVersions), o.apiVersions...),
		HelmVersion: map[string]string{"Version": "v3-compatible (berth chart-renderer)"},
	}

	// Gather the chart's files: templates/ are templates, crds/ are printed as they are, the
	// rest is .Files.
	files := Files{}
	var templates, crds []string
	err = filepath.Walk(chartDir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel != "." && strings.HasPrefix(info.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			templates = append(templates, rel)
		case strings.HasPrefix(rel, "crds/"):
			ext := path.Ext(rel)
			if ext == ".yaml" || ext == ".yml" || ext == ".json" {
				crds = append(crds, rel)
			}
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json":
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(templates)
	sort.Strings(crds)

	e := &engine{depth: map[string]int{}, objects: objects}
	e.t = template.New("gotpl").Option("missingkey=zero")
	e.t.Funcs(e.funcMap())
	for _, rel := range templates {
		data, err := os.ReadFile(filepath.Join(chartDir, rel))
		if err != nil {
			return err
		}
		if _, err := e.t.New(meta.Name + "/" + rel).Parse(string(data)); err != nil {
			return fmt.Errorf("parse error in %s: %w", rel, err)
		}
	}

	var manifests []manifest
	notes := ""
	for _, rel := range templates {
		base := path.Base(rel)
		if strings.HasPrefix(base, "_") {
			continue
		}
		name := meta.Name + "/" + rel
		top := map[string]interface{}{
			"Values":       values,
			"Release":      Release{Name: o.release, Namespace: o.namespace, IsInstall: !o.isUpgrade, IsUpgrade: o.isUpgrade, Revision: 1, Service: "Helm"},
			"Chart":        &meta,
			"Capabilities": &caps,
			"Files":        files,
			"Subcharts":    map[string]interface{}{},
			"Template":     TemplateInfo{Name: name, BasePath: meta.Name + "/templates"},
		}
		var buf bytes.Buffer
		if err := e.t.ExecuteTemplate(&buf, name, top); err != nil {
			return cleanupExecError(name, err)
		}
		rendered := strings.ReplaceAll(buf.String(), "<no value>", "")
		if rel == "templates/NOTES.txt" {
			notes = rendered
			continue
		}
		if strings.EqualFold(base, "NOTES.txt") {
			continue
		}
		ms, err := splitManifests(name, rendered)
		if err != nil {
			return err
		}
		manifests = append(manifests, ms...)
	}
	sortByKind(manifests)

	w := os.Stdout
	if o.notesOnly {
		fmt.Fprint(w, notes)
		return nil
	}
	if o.includeCRDs {
		for _, rel := range crds {
			data, err := os.ReadFile(filepath.Join(chartDir, rel))
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "---\n# Source: %s\n%s\n", meta.Name+"/"+rel, string(data))
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(w, "---\n# Source: %s\n%s\n", m.source, m.content)
	}
	return nil
}

// cleanupExecError shortens text/template's message the way Helm does for required/fail.
func cleanupExecError(name string, err error) error {
	msg := err.Error()
	re := regexp.MustCompile(`^template: (\S+?): executing "[^"]*" at <[^>]*>: error calling (?:required|fail): (.*)$`)
	if m := re.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return fmt.Errorf("rendering %s: %s", name, msg)
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}
