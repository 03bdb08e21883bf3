package config

import (
	"fmt"
	"sort"
	"strings"
)

// node is a component as the graph checks see it.
type node struct {
	name    string
	section string // "sources", "transforms" or "sinks"
	kind    string // the type: value
	line    int
	inputs  []input
	outputs []string // a route's output names; nil for others
}

type input struct {
	name string
	line int
}

// checkGraph reports dangling inputs, inputs that name something that cannot
// be an input, components fed by nothing, components and route outputs that
// feed nothing, and cycles.
func (l *loader) checkGraph(nodes []*node, deadLetterTargets map[string]bool) {
	byName := make(map[string]*node, len(nodes))
	for _, n := range nodes {
		if _, dup := byName[n.name]; !dup {
			byName[n.name] = n
		}
	}
	// The names a component may list as an input.
	var valid []string
	for _, n := range nodes {
		switch {
		case n.section == "sinks":
		case n.outputs != nil:
			for _, o := range n.outputs {
				valid = append(valid, n.name+"."+o)
			}
		default:
			valid = append(valid, n.name)
		}
	}
	sort.Strings(valid)

	used := make(map[string]bool) // names and route outputs that feed something
	edges := make(map[string][]string)
	for _, n := range nodes {
		if n.section == "sources" {
			continue
		}
		field := n.section + "." + n.name + ".inputs"
		seen := make(map[string]bool)
		for _, in := range n.inputs {
			if seen[in.name] {
				l.errorAt(in.line, field, "%q is listed twice; each record would arrive twice", in.name)
				continue
			}
			seen[in.name] = true
			target, ok := l.inputTarget(in, field, byName, valid)
			if !ok {
				continue
			}
			used[in.name] = true
			used[target.name] = true
			if target.section == "transforms" {
				edges[n.name] = append(edges[n.name], target.name)
			}
		}
		if len(n.inputs) == 0 && !(n.section == "sinks" && deadLetterTargets[n.name]) {
			l.errorAt(n.line, field, "%s %q is fed by nothing: list the sources, transforms or route outputs it reads in inputs: [...]", singular(n.section), n.name)
		}
	}
	for _, n := range nodes {
		if n.section == "sinks" {
			continue
		}
		if !used[n.name] {
			// Records that reach a component with no consumer would be
			// dropped and their positions committed: data silently lost.
			l.errorAt(n.line, n.section+"."+n.name, "%s %q feeds nothing, so its records would be dropped: name it in the inputs of a transform or sink, or remove it", singular(n.section), n.name)
			continue
		}
		for _, o := range n.outputs {
			if !used[n.name+"."+o] {
				l.errorAt(n.line, n.section+"."+n.name+".outputs."+o, "route output %q feeds nothing, so records matching only it would be dropped: name %q in the inputs of a transform or sink, or remove the output", o, n.name+"."+o)
			}
		}
	}
	l.checkCycles(nodes, edges)
}

// inputTarget resolves one input name to its component, reporting why it
// cannot be used when it cannot.
func (l *loader) inputTarget(in input, field string, byName map[string]*node, valid []string) (*node, bool) {
	name, output, hasOutput := strings.Cut(in.name, ".")
	target, ok := byName[name]
	switch {
	case !ok:
		msg := fmt.Sprintf("%q names no source, transform or route output", in.name)
		if s := closest(in.name, valid); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else if len(valid) > 0 {
			msg += "; valid inputs: " + strings.Join(valid, ", ")
		}
		l.errorAt(in.line, field, "%s", msg)
	case target.section == "sinks":
		l.errorAt(in.line, field, "%q is a sink, and sinks have no output; name a source, transform or route output", in.name)
	case target.outputs != nil && !hasOutput:
		l.errorAt(in.line, field, "%q is a route: name one of its outputs (%s)", in.name, strings.Join(prefixed(name, target.outputs), ", "))
	case target.outputs != nil && !contains(target.outputs, output):
		l.errorAt(in.line, field, "route %q has no output %q; its outputs are %s", name, output, strings.Join(prefixed(name, target.outputs), ", "))
	case target.outputs == nil && hasOutput:
		l.errorAt(in.line, field, "%q is not a route, so %q names nothing; write %q", name, in.name, name)
	default:
		return target, true
	}
	return nil, false
}

// checkCycles reports each cycle among transforms once, naming its path.
func (l *loader) checkCycles(nodes []*node, edges map[string][]string) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int)
	byName := make(map[string]*node)
	for _, n := range nodes {
		byName[n.name] = n
	}
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		path = append(path, name)
		for _, next := range edges[name] {
			switch state[next] {
			case unseen:
				visit(next)
			case onPath:
				// path runs next ... name along inputs; records flow the
				// other way, so the cycle reads next, then path backwards.
				i := indexOf(path, next)
				cycle := []string{next}
				for j := len(path) - 1; j > i; j-- {
					cycle = append(cycle, path[j])
				}
				cycle = append(cycle, next)
				l.errorAt(byName[next].line, "transforms."+next+".inputs", "inputs form a cycle, so no record could ever leave it: %s", strings.Join(cycle, " -> "))
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	for _, n := range nodes {
		if n.section == "transforms" && state[n.name] == unseen {
			visit(n.name)
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func contains(s []string, x string) bool { return indexOf(s, x) >= 0 }

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + "." + n
	}
	return out
}

func singular(section string) string { return strings.TrimSuffix(section, "s") }

// closest returns the candidate nearest to s by edit distance, if it is near
// enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
