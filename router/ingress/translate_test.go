package ingress

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// fixture is the objects of a testdata file, as a user would apply them.
type fixture struct {
	ingresses []*networkingv1.Ingress
	services  map[string]*corev1.Service
	secrets   map[string]*corev1.Secret
	classes   map[string]*networkingv1.IngressClass
}

func (f *fixture) Service(ns, name string) *corev1.Service { return f.services[ns+"/"+name] }
func (f *fixture) Secret(ns, name string) *corev1.Secret   { return f.secrets[ns+"/"+name] }
func (f *fixture) IngressClass(name string) *networkingv1.IngressClass {
	return f.classes[name]
}

// documents splits a YAML stream on "---" lines, dropping empty documents.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			docs = append(docs, j)
		}
	}
	return docs
}

func strictDecode(t *testing.T, path string, j []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(j, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadFixture(t *testing.T, path string) *fixture {
	t.Helper()
	f := &fixture{services: map[string]*corev1.Service{}, secrets: map[string]*corev1.Secret{}, classes: map[string]*networkingv1.IngressClass{}}
	for _, j := range documents(t, path) {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal(j, &tm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch tm.Kind {
		case "Service":
			s := &corev1.Service{}
			strictDecode(t, path, j, s)
			f.services[s.Namespace+"/"+s.Name] = s
		case "Secret":
			s := &corev1.Secret{}
			strictDecode(t, path, j, s)
			if s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			for k, v := range s.StringData {
				s.Data[k] = []byte(v)
			}
			f.secrets[s.Namespace+"/"+s.Name] = s
		case "IngressClass":
			c := &networkingv1.IngressClass{}
			strictDecode(t, path, j, c)
			f.classes[c.Name] = c
		case "Ingress":
			i := &networkingv1.Ingress{}
			strictDecode(t, path, j, i)
			f.ingresses = append(f.ingresses, i)
		default:
			t.Fatalf("%s: unexpected kind %q", path, tm.Kind)
		}
	}
	return f
}

func loadRoutes(t *testing.T, path string) []*routev1.Route {
	t.Helper()
	var routes []*routev1.Route
	for _, j := range documents(t, path) {
		r := &routev1.Route{}
		strictDecode(t, path, j, r)
		routes = append(routes, r)
	}
	return routes
}

func TestTranslateFollowsOpenShiftRules(t *testing.T) {
	tests := []struct {
		name string
		// skipped are the reasons reported, in order, over all Ingresses.
		skipped []string
		// unmanaged are the Ingresses left to other controllers.
		unmanaged []string
	}{
		{name: "two-paths-tls"},
		{name: "skipped-rules", skipped: []string{
			"Missing host field in rule at index 0",
			"Missing http field in rule at index 1",
			"Unsupported exact path type in rule at index 2, path index 0",
			`Backend service "nosuch" not found at index 2, path index 1`,
			`No valid target port for backend service "web" at index 2, path index 2`,
			`No valid target port for backend service "web" at index 2, path index 3`,
			"Missing backend service field in rule at index 2, path index 4",
		}},
		{name: "bad-secret", skipped: []string{
			`Invalid or missing TLS secret for rule host "a.example.com" at index 0, path index 0`,
			`Invalid or missing TLS secret for rule host "b.example.com" at index 1, path index 0`,
			`Invalid or missing TLS secret for rule host "c.example.com" at index 2, path index 0`,
		}},
		{name: "reencrypt"},
		{name: "passthrough-wildcard"},
		{name: "empty-tls"},
		{name: "classes", unmanaged: []string{"nginx", "missing-class", "annotation-wins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, filepath.Join("testdata", tt.name+".yaml"))
			want := loadRoutes(t, filepath.Join("testdata", tt.name+".want.yaml"))
			var got []*routev1.Route
			var skipped, unmanaged []string
			for _, ing := range f.ingresses {
				res := Translate(ing, f)
				if !res.Managed {
					unmanaged = append(unmanaged, ing.Name)
					if len(res.Routes)+len(res.Skipped) != 0 {
						t.Errorf("unmanaged Ingress %s translated: %+v", ing.Name, res)
					}
				}
				got = append(got, res.Routes...)
				skipped = append(skipped, res.Skipped...)
			}
			if w, g := toYAML(t, want), toYAML(t, got); w != g {
				t.Errorf("routes:\n--- want\n%s\n--- got\n%s", w, g)
			}
			if w, g := toYAML(t, tt.skipped), toYAML(t, skipped); w != g {
				t.Errorf("skipped reasons:\n--- want\n%s\n--- got\n%s", w, g)
			}
			if w, g := toYAML(t, tt.unmanaged), toYAML(t, unmanaged); w != g {
				t.Errorf("unmanaged Ingresses: want %s, got %s", w, g)
			}
		})
	}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRouteNameIsIngressNameAndFiveGeneratedCharacters(t *testing.T) {
	re := regexp.MustCompile(`^shop-[` + nameAlphabet + `]{5}$`)
	a := RouteName("ns", "shop", "shop.example.com", "/")
	if !re.MatchString(a) {
		t.Errorf("name %q does not match %s", a, re)
	}
	if b := RouteName("ns", "shop", "shop.example.com", "/"); b != a {
		t.Errorf("name not stable: %q then %q", a, b)
	}
	for _, other := range []string{
		RouteName("ns", "shop", "shop.example.com", "/api"),
		RouteName("ns", "shop", "www.example.com", "/"),
		RouteName("other", "shop", "shop.example.com", "/"),
	} {
		if other == a {
			t.Errorf("distinct host/path/namespace gave the same name %q", a)
		}
	}
	long := strings.Repeat("a", 80)
	n := RouteName("ns", long, "h", "/")
	if len(n) != maxNameLength || !strings.HasPrefix(n, long[:maxNameLength-suffixLength]) {
		t.Errorf("long name %q: want the first %d characters of the Ingress name and 5 more", n, maxNameLength-suffixLength)
	}
}
