{{/* Rules shared by the NetworkPolicies of networkpolicy.yaml. */}}

{{/* Egress to the cluster DNS. */}}
{{- define "tokendata.np.dns" -}}
# DNS.
- to:
    - namespaceSelector:
        {{- toYaml .Values.networkPolicy.dns.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml .Values.networkPolicy.dns.podSelector | nindent 8 }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- with .Values.networkPolicy.dns.nodeLocal }}
{{- if .enabled }}
# NodeLocal DNSCache: the node's cache on its link-local address.
- to:
    - ipBlock:
        cidr: {{ printf "%s/32" .ip }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}
{{- end }}
{{- end -}}

{{/* Egress to Redis: the in-chart one, or the external peers and ports. */}}
{{- define "tokendata.np.redis" -}}
# Redis.
{{- if .Values.redis.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "tokendata.selectorLabels" (dict "root" . "component" "redis") | nindent 10 }}
  ports:
    - port: {{ .Values.redis.port }}
      protocol: TCP
{{- else }}
- {{- with .Values.networkPolicy.externalRedis.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- range .Values.networkPolicy.externalRedis.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- end }}
{{- end -}}

{{/* Who may reach the public port: networkPolicy.publicFrom (empty: anyone), plus the helm test pod. */}}
{{- define "tokendata.np.publicFrom" -}}
{{- $from := .Values.networkPolicy.publicFrom -}}
{{- if .Values.tests.enabled -}}
{{- $from = append $from (dict "podSelector" (dict "matchLabels" (fromYaml (include "tokendata.selectorLabels" (dict "root" . "component" "test"))))) -}}
{{- end -}}
{{- if .Values.networkPolicy.publicFrom }}
from:
  {{- toYaml $from | nindent 2 }}
{{- end }}
{{- end -}}
