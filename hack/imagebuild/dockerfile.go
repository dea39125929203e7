package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Stage is what the final stage of services/Dockerfile says about the
// image it makes: the builder here makes the same image without Docker, so
// it reads these from the Dockerfile rather than keeping a second copy.
type Stage struct {
	// RuntimeImage is the default of the RUNTIME_IMAGE build argument: the
	// base of the final stage.
	RuntimeImage string
	// Labels are the LABEL pairs, with ${SERVICE}, ${VERSION} and ${COMMIT}
	// still in them (Expand fills them in).
	Labels [][2]string
	// User is the USER instruction.
	User string
	// Expose are the EXPOSE ports ("8080", "9090/udp").
	Expose []string
	// Entrypoint is the ENTRYPOINT, exec form.
	Entrypoint []string
	// Binary is where the final stage copies the service's binary.
	Binary string
}

// ReadStage parses the final stage of a Dockerfile of the shape of
// services/Dockerfile. Only the instructions that stage may hold are
// understood (ARG, LABEL, COPY --from=build, USER, EXPOSE, ENTRYPOINT); any
// other is an error, so that a change to the Dockerfile that the builder
// would not reproduce fails here instead of making a different image.
func ReadStage(path string) (Stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stage{}, err
	}
	defer f.Close()
	return parseStage(f)
}

func parseStage(r io.Reader) (Stage, error) {
	var (
		st      Stage
		insts   [][2]string // instruction, rest, of the final stage
		args    = map[string]string{}
		stages  int
		logical strings.Builder
	)
	sc := bufio.NewScanner(r)
	flush := func() error {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" {
			return nil
		}
		inst, rest, _ := strings.Cut(line, " ")
		inst = strings.ToUpper(inst)
		rest = strings.TrimSpace(rest)
		switch {
		case inst == "FROM":
			stages++
			insts = nil
			if stages > 1 {
				insts = append(insts, [2]string{inst, rest})
			}
		case inst == "ARG" && stages == 0:
			name, val, ok := strings.Cut(rest, "=")
			if ok {
				args[name] = strings.Trim(val, `"`)
			}
		default:
			insts = append(insts, [2]string{inst, rest})
		}
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if logical.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, `\`) {
			logical.WriteString(strings.TrimSuffix(trimmed, `\`))
			logical.WriteString(" ")
			continue
		}
		logical.WriteString(trimmed)
		if err := flush(); err != nil {
			return st, err
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if err := flush(); err != nil {
		return st, err
	}
	if stages < 2 || len(insts) == 0 {
		return st, fmt.Errorf("dockerfile: want a build stage and a final stage, found %d stages", stages)
	}
	from := insts[0][1]
	if from != "${RUNTIME_IMAGE}" {
		return st, fmt.Errorf("dockerfile: final stage FROM %q, want ${RUNTIME_IMAGE}", from)
	}
	st.RuntimeImage = args["RUNTIME_IMAGE"]
	if st.RuntimeImage == "" {
		return st, fmt.Errorf("dockerfile: no default for ARG RUNTIME_IMAGE")
	}
	for _, in := range insts[1:] {
		inst, rest := in[0], in[1]
		switch inst {
		case "ARG":
			// SERVICE, VERSION, COMMIT: filled in by Expand.
		case "LABEL":
			pairs, err := splitLabels(rest)
			if err != nil {
				return st, err
			}
			st.Labels = append(st.Labels, pairs...)
		case "COPY":
			f := strings.Fields(rest)
			if len(f) != 3 || f[0] != "--from=build" || f[1] != "/out/service" {
				return st, fmt.Errorf("dockerfile: COPY %q, want COPY --from=build /out/service <path>", rest)
			}
			st.Binary = f[2]
		case "USER":
			st.User = rest
		case "EXPOSE":
			st.Expose = append(st.Expose, strings.Fields(rest)...)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &st.Entrypoint); err != nil {
				return st, fmt.Errorf("dockerfile: ENTRYPOINT %q: want the exec form: %w", rest, err)
			}
		default:
			return st, fmt.Errorf("dockerfile: the final stage has %s, which hack/imagebuild does not reproduce", inst)
		}
	}
	if st.Binary == "" || st.User == "" || len(st.Entrypoint) == 0 {
		return st, fmt.Errorf("dockerfile: the final stage needs COPY of the binary, USER and ENTRYPOINT")
	}
	return st, nil
}

// splitLabels splits `k1="v1" k2="v2"` (values quoted, no escaped quotes).
func splitLabels(s string) ([][2]string, error) {
	var out [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return nil, fmt.Errorf("dockerfile: LABEL %q: want key=\"value\" pairs", s)
		}
		end := strings.Index(rest[1:], `"`)
		if end < 0 {
			return nil, fmt.Errorf("dockerfile: LABEL %q: unterminated value", s)
		}
		out = append(out, [2]string{k, rest[1 : end+1]})
		s = rest[end+2:]
	}
	return out, nil
}

// Expand fills ${SERVICE}, ${VERSION} and ${COMMIT} in the labels.
func (st Stage) Expand(service, version, commit string) map[string]string {
	r := strings.NewReplacer("${SERVICE}", service, "${VERSION}", version, "${COMMIT}", commit)
	out := map[string]string{}
	for _, kv := range st.Labels {
		out[kv[0]] = r.Replace(kv[1])
	}
	return out
}
