package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// secret is a value that came from the environment. Whatever it holds (a
// password, a token) is never shown: errors show ref instead.
type secret struct {
	value string // what the environment gave
	ref   string // how the file wrote it: ${NAME}
}

// substitute replaces ${NAME} and ${NAME:-default} in s. $${ stands for a
// literal ${. It returns the result, the substituted values, and one message
// per problem.
func substitute(s string, lookup func(string) (string, bool)) (string, []secret, []string) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var (
		b    strings.Builder
		subs []secret
		errs []string
	)
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' {
			// $${ is an escaped ${: keep one $ and the rest verbatim.
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs = append(errs, fmt.Sprintf("%q is not closed: write ${NAME} or ${NAME:-default}, or $${ for a literal ${", s[i:]))
			b.WriteString(s[i:])
			break
		}
		ref := s[i : i+end+1]
		inner := ref[2 : len(ref)-1]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !validEnvName(name) {
			errs = append(errs, fmt.Sprintf("%s does not name an environment variable: use letters, digits and _, not starting with a digit", ref))
		} else if v, ok := lookup(name); ok && v != "" {
			b.WriteString(v)
			subs = append(subs, secret{value: v, ref: "${" + name + "}"})
		} else if hasDef {
			// As in the shell, an empty variable takes the default too.
			b.WriteString(def)
		} else if ok {
			// Set but empty: substitute nothing, which is what was asked for.
		} else {
			errs = append(errs, fmt.Sprintf("environment variable %s is not set: set it, or give a default as ${%s:-value}", name, name))
		}
		s = s[i+end+1:]
	}
	return b.String(), subs, errs
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// substituteTree applies substitute to every scalar value under n (mapping
// keys are names, not values, and are left alone), recording the original text
// of each changed scalar so that errors can show it in place of the value.
func (l *loader) substituteTree(n *yaml.Node, field string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			l.substituteTree(c, field)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			l.substituteTree(n.Content[i+1], join(field, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			l.substituteTree(c, fmt.Sprintf("%s[%d]", field, i))
		}
	case yaml.ScalarNode:
		if _, done := l.original[n]; done {
			return // reached again through an alias
		}
		v, subs, errs := substitute(n.Value, l.lookup)
		for _, msg := range errs {
			l.errorf(n, field, "%s", msg)
			l.explain(field)
		}
		if v == n.Value && len(subs) == 0 {
			return
		}
		l.original[n] = n.Value
		l.secrets = append(l.secrets, subs...)
		n.Value = v
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			// A plain ${PORT} was typed as a string when parsed; let the
			// substituted text be typed afresh, so that 8080 is a number.
			n.Tag = ""
		}
	}
}
