package chartcheck

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Set is the decoded objects of one render.
type Set []Object

// Of returns the objects of one kind.
func (s Set) Of(kind string) Set {
	var out Set
	for _, o := range s {
		if o.Kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Get returns the object of kind and name, or false.
func (s Set) Get(kind, name string) (Object, bool) {
	for _, o := range s {
		if o.Kind() == kind && o.Name() == name {
			return o, true
		}
	}
	return Object{}, false
}

// podTemplate is a workload's pod template, with its owner and replicas.
type podTemplate struct {
	owner    Object
	labels   map[string]string
	spec     corev1.PodSpec
	replicas *int32
	isHook   bool
}

// pods returns every pod template of the set (Deployments, StatefulSets,
// bare Pods such as the helm test).
func (s Set) pods() []podTemplate {
	var out []podTemplate
	for _, o := range s {
		switch t := o.Typed.(type) {
		case *appsv1.Deployment:
			out = append(out, podTemplate{owner: o, labels: t.Spec.Template.Labels, spec: t.Spec.Template.Spec, replicas: t.Spec.Replicas})
		case *appsv1.StatefulSet:
			out = append(out, podTemplate{owner: o, labels: t.Spec.Template.Labels, spec: t.Spec.Template.Spec, replicas: t.Spec.Replicas})
		case *corev1.Pod:
			_, hook := t.Annotations["helm.sh/hook"]
			out = append(out, podTemplate{owner: o, labels: t.Labels, spec: t.Spec, isHook: hook})
		}
	}
	return out
}

// Check runs every policy over the set and joins what fails.
func (s Set) Check() error {
	return errors.Join(
		s.CheckContainers(),
		s.CheckServiceAccounts(),
		s.CheckSelectors(),
		s.CheckPodTemplateLabels(),
		s.CheckDisruptionAndScaling(),
		s.CheckSecrets(),
		s.CheckNetworkPolicies(),
	)
}

// CheckContainers: every container has a pinned image, requests, probes
// (hook pods excepted: they run to completion) and the secure context.
func (s Set) CheckContainers() error {
	var errs []error
	for _, p := range s.pods() {
		psc := p.spec.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		containers := append(slices.Clone(p.spec.InitContainers), p.spec.Containers...)
		for _, c := range containers {
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("%s container %q: %s", p.owner, c.Name, fmt.Sprintf(format, a...)))
			}
			if c.Image == "" {
				bad("no image")
			} else if !strings.Contains(c.Image, "@sha256:") {
				i := strings.LastIndex(c.Image, ":")
				if i < 0 || strings.Contains(c.Image[i:], "/") || c.Image[i+1:] == "" {
					bad("image %q has no tag or digest", c.Image)
				} else if c.Image[i+1:] == "latest" {
					bad("image %q is :latest", c.Image)
				}
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				bad("no cpu or memory requests")
			}
			if !p.isHook && (c.LivenessProbe == nil || c.ReadinessProbe == nil) {
				bad("no liveness or readiness probe")
			}
			sc := c.SecurityContext
			if sc == nil {
				bad("no securityContext")
				continue
			}
			if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
				bad("runAsNonRoot is not true")
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 || psc.RunAsUser != nil && *psc.RunAsUser == 0 {
				bad("runs as uid 0")
			}
			if !isTrue(sc.ReadOnlyRootFilesystem) {
				bad("readOnlyRootFilesystem is not true")
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				bad("allowPrivilegeEscalation is not false")
			}
			if isTrue(sc.Privileged) {
				bad("privileged")
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				bad("capabilities do not drop ALL (or add some)")
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil {
				seccomp = psc.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				bad("seccomp profile is not RuntimeDefault")
			}
		}
		if !isFalse(p.spec.AutomountServiceAccountToken) {
			errs = append(errs, fmt.Errorf("%s: automountServiceAccountToken is not false", p.owner))
		}
		if p.spec.HostNetwork || p.spec.HostPID || p.spec.HostIPC {
			errs = append(errs, fmt.Errorf("%s: uses the host's namespaces", p.owner))
		}
	}
	return errors.Join(errs...)
}

// CheckServiceAccounts: no token is mounted from any ServiceAccount, and
// every pod runs under one of the chart's.
func (s Set) CheckServiceAccounts() error {
	var errs []error
	for _, o := range s.Of("ServiceAccount") {
		sa := o.Typed.(*corev1.ServiceAccount)
		if !isFalse(sa.AutomountServiceAccountToken) {
			errs = append(errs, fmt.Errorf("%s: automountServiceAccountToken is not false", o))
		}
	}
	for _, p := range s.pods() {
		if p.isHook {
			continue
		}
		if _, ok := s.Get("ServiceAccount", p.spec.ServiceAccountName); !ok {
			errs = append(errs, fmt.Errorf("%s: serviceAccountName %q is not rendered by the chart", p.owner, p.spec.ServiceAccountName))
		}
	}
	return errors.Join(errs...)
}

// CheckSelectors: workload selectors match their pod labels, every
// Service, PDB and NetworkPolicy selects some pod, every Service target
// port names a container port of the pods it selects, every HPA targets
// a rendered Deployment.
func (s Set) CheckSelectors() error {
	var errs []error
	for _, o := range s {
		var sel *metav1.LabelSelector
		var tmpl map[string]string
		switch t := o.Typed.(type) {
		case *appsv1.Deployment:
			sel, tmpl = t.Spec.Selector, t.Spec.Template.Labels
		case *appsv1.StatefulSet:
			sel, tmpl = t.Spec.Selector, t.Spec.Template.Labels
			if svc, ok := s.Get("Service", t.Spec.ServiceName); !ok {
				errs = append(errs, fmt.Errorf("%s: serviceName %q is not rendered", o, t.Spec.ServiceName))
			} else if svc.Typed.(*corev1.Service).Spec.ClusterIP != corev1.ClusterIPNone {
				errs = append(errs, fmt.Errorf("%s: serviceName %q is not a headless Service (clusterIP: None)", o, t.Spec.ServiceName))
			}
		default:
			continue
		}
		if !matches(sel, tmpl) {
			errs = append(errs, fmt.Errorf("%s: selector %v does not match its template labels %v", o, sel, tmpl))
		}
	}
	pods := s.pods()
	selected := func(sel *metav1.LabelSelector) []podTemplate {
		var out []podTemplate
		for _, p := range pods {
			if matches(sel, p.labels) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, o := range s.Of("Service") {
		svc := o.Typed.(*corev1.Service)
		got := selected(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if len(svc.Spec.Selector) == 0 || len(got) == 0 {
			errs = append(errs, fmt.Errorf("%s: selector %v selects no pod", o, svc.Spec.Selector))
			continue
		}
		for _, port := range svc.Spec.Ports {
			for _, p := range got {
				if !hasPort(p.spec, port.TargetPort.String(), port.TargetPort.IntValue()) {
					errs = append(errs, fmt.Errorf("%s: targetPort %s is no container port of %s", o, port.TargetPort.String(), p.owner))
				}
			}
		}
	}
	for _, o := range s.Of("PodDisruptionBudget") {
		pdb := o.Typed.(*policyv1.PodDisruptionBudget)
		if len(selected(pdb.Spec.Selector)) == 0 {
			errs = append(errs, fmt.Errorf("%s: selector selects no pod", o))
		}
	}
	for _, o := range s.Of("NetworkPolicy") {
		np := o.Typed.(*networkingv1.NetworkPolicy)
		if len(selected(&np.Spec.PodSelector)) == 0 {
			errs = append(errs, fmt.Errorf("%s: podSelector selects no pod", o))
		}
	}
	for _, o := range s.Of("HorizontalPodAutoscaler") {
		hpa := o.Typed.(*autoscalingv2.HorizontalPodAutoscaler)
		if _, ok := s.Get(hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name); !ok {
			errs = append(errs, fmt.Errorf("%s: target %s/%s is not rendered", o, hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name))
		}
	}
	return errors.Join(errs...)
}

// CheckDisruptionAndScaling: a PDB only for more than one replica; a
// Deployment under an HPA leaves replicas out (helm upgrades would reset
// the HPA's count otherwise).
func (s Set) CheckDisruptionAndScaling() error {
	var errs []error
	hpaMin := map[string]int32{}
	for _, o := range s.Of("HorizontalPodAutoscaler") {
		hpa := o.Typed.(*autoscalingv2.HorizontalPodAutoscaler)
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" {
			continue
		}
		hpaMin[hpa.Spec.ScaleTargetRef.Name] = ptrOr(hpa.Spec.MinReplicas, 1)
		if d, ok := s.Get("Deployment", hpa.Spec.ScaleTargetRef.Name); ok && d.Typed.(*appsv1.Deployment).Spec.Replicas != nil {
			errs = append(errs, fmt.Errorf("%s: sets replicas although %s scales it", d, o))
		}
	}
	for _, o := range s.Of("PodDisruptionBudget") {
		pdb := o.Typed.(*policyv1.PodDisruptionBudget)
		for _, p := range s.pods() {
			if !matches(pdb.Spec.Selector, p.labels) {
				continue
			}
			n := ptrOr(p.replicas, 1)
			if m, ok := hpaMin[p.owner.Name()]; ok {
				n = m
			}
			if n <= 1 {
				errs = append(errs, fmt.Errorf("%s: guards %s, which runs %d replica", o, p.owner, n))
			}
		}
	}
	return errors.Join(errs...)
}

// secretish names environment variables that hold secrets.
var secretish = regexp.MustCompile(`(?i)(PASSWORD|SECRET|TOKEN$|API_?KEY|RPC_URL)`)

// secretRefsOnly reports whether value is only comma-separated $(NAME)
// references to variables of env that come from a Secret (SOLANA_RPC_URLS
// joined from one Secret key per ledger node).
func secretRefsOnly(value string, env []corev1.EnvVar) bool {
	fromSecret := map[string]bool{}
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret[e.Name] = true
		}
	}
	for ref := range strings.SplitSeq(value, ",") {
		name, ok := strings.CutPrefix(ref, "$(")
		name, closed := strings.CutSuffix(name, ")")
		if !ok || !closed || !fromSecret[name] {
			return false
		}
	}
	return value != ""
}

// CheckSecrets: no secret value is rendered in clear. Secret-looking
// variables come from a Secret (an RPC URL may be a literal only when it
// names a Service of the cluster, as the live demo's simulator, with no
// credentials, query or fragment); REDIS_URL literals carry no credentials
// except the $(REDIS_PASSWORD) reference; the value of every rendered
// Secret appears nowhere else.
func (s Set) CheckSecrets() error {
	var errs []error
	for _, p := range s.pods() {
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					continue
				}
				if secretish.MatchString(e.Name) && !inClusterURL(e.Value) && !secretRefsOnly(e.Value, c.Env) {
					errs = append(errs, fmt.Errorf("%s container %q: %s is a literal value, not from a Secret", p.owner, c.Name, e.Name))
				}
				if e.Name == "REDIS_URL" && strings.Contains(strings.ReplaceAll(e.Value, ":$(REDIS_PASSWORD)@", ""), "@") {
					errs = append(errs, fmt.Errorf("%s container %q: REDIS_URL carries credentials in clear", p.owner, c.Name))
				}
			}
		}
	}
	for _, o := range s.Of("Secret") {
		sec := o.Typed.(*corev1.Secret)
		for key, v := range sec.Data {
			if len(v) < 8 {
				errs = append(errs, fmt.Errorf("%s: %s is shorter than 8 bytes", o, key))
				continue
			}
			for _, other := range s {
				if other.Kind() == "Secret" {
					continue
				}
				js, _ := other.U.MarshalJSON()
				if strings.Contains(string(js), string(v)) {
					errs = append(errs, fmt.Errorf("%s: the value of %s appears in clear in %s", o, key, other))
				}
			}
		}
		for key := range sec.StringData {
			errs = append(errs, fmt.Errorf("%s: stringData %s is rendered in clear", o, key))
		}
	}
	return errors.Join(errs...)
}

// CheckNetworkPolicies: when the chart renders NetworkPolicies, a
// default deny covers every pod of the release, and every pod has an allow
// policy of its own.
func (s Set) CheckNetworkPolicies() error {
	nps := s.Of("NetworkPolicy")
	if len(nps) == 0 {
		return nil
	}
	var errs []error
	var deny *networkingv1.NetworkPolicy
	for _, o := range nps {
		np := o.Typed.(*networkingv1.NetworkPolicy)
		if len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 && len(np.Spec.PodSelector.MatchLabels) == 2 &&
			slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) &&
			slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			deny = np
		}
	}
	if deny == nil {
		return errors.New("NetworkPolicy: no default deny (both policy types, no rules, selecting the release)")
	}
	for _, p := range s.pods() {
		if !matches(&deny.Spec.PodSelector, p.labels) {
			errs = append(errs, fmt.Errorf("%s: not under the default deny", p.owner))
		}
		own := 0
		for _, o := range nps {
			np := o.Typed.(*networkingv1.NetworkPolicy)
			if np != deny && matches(&np.Spec.PodSelector, p.labels) {
				own++
			}
		}
		if own == 0 {
			errs = append(errs, fmt.Errorf("%s: no NetworkPolicy allows it anything", p.owner))
		}
	}
	return errors.Join(errs...)
}

// Policy returns the NetworkPolicy selecting a component's pods.
func (s Set) Policy(component string) (*networkingv1.NetworkPolicy, bool) {
	for _, o := range s.Of("NetworkPolicy") {
		np := o.Typed.(*networkingv1.NetworkPolicy)
		if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] == component {
			return np, true
		}
	}
	return nil, false
}

func matches(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return false
	}
	ls, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || ls.Empty() {
		return false
	}
	return ls.Matches(labels.Set(l))
}

func hasPort(spec corev1.PodSpec, name string, number int) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name || (number != 0 && int(p.ContainerPort) == number) {
				return true
			}
		}
	}
	return false
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// releaseLabels change with every chart release without anything in the
// pods changing: on a pod template they would restart every pod (Redis
// on its emptyDir included) at each chart upgrade.
var releaseLabels = []string{"helm.sh/chart", "app.kubernetes.io/version"}

// CheckPodTemplateLabels: no pod template (hook pods aside) carries a
// label that changes with the chart's version.
func (s Set) CheckPodTemplateLabels() error {
	var errs []error
	for _, p := range s.pods() {
		if p.isHook {
			continue
		}
		for _, l := range releaseLabels {
			if _, ok := p.labels[l]; ok {
				errs = append(errs, fmt.Errorf("%s: pod template label %s changes with every chart release (restarts the pods)", p.owner, l))
			}
		}
	}
	return errors.Join(errs...)
}

// inClusterURL reports whether v is an http URL of a cluster Service
// (host *.svc or *.svc.cluster.local) that carries no credentials, query
// or fragment: nothing secret can be in it.
func inClusterURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	h := u.Hostname()
	return strings.HasSuffix(h, ".svc") || strings.HasSuffix(h, ".svc.cluster.local")
}
