package cosmossql

import "strings"

// Functions: name (upper case) -> allowed argument counts.
var functions = map[string][2]int{
	"STARTSWITH": {2, 3}, "ENDSWITH": {2, 3}, "CONTAINS": {2, 3},
	"IS_DEFINED": {1, 1}, "IS_NULL": {1, 1}, "ARRAY_CONTAINS": {2, 3}, "COUNT": {1, 1},
}

type callExpr struct {
	name string
	args []expr
}

func (c callExpr) eval(doc map[string]any) any {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		vals[i] = a.eval(doc)
	}
	switch c.name {
	case "IS_DEFINED":
		return vals[0] != undefined
	case "IS_NULL":
		return vals[0] == nil
	case "STARTSWITH", "ENDSWITH", "CONTAINS":
		s, ok1 := vals[0].(string)
		sub, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return undefined
		}
		if len(vals) == 3 {
			ignoreCase, ok := vals[2].(bool)
			if !ok {
				return undefined
			}
			if ignoreCase {
				s, sub = strings.ToLower(s), strings.ToLower(sub)
			}
		}
		switch c.name {
		case "STARTSWITH":
			return strings.HasPrefix(s, sub)
		case "ENDSWITH":
			return strings.HasSuffix(s, sub)
		}
		return strings.Contains(s, sub)
	case "ARRAY_CONTAINS":
		arr, ok := vals[0].([]any)
		if !ok {
			return undefined
		}
		partial := false
		if len(vals) == 3 {
			if partial, ok = vals[2].(bool); !ok {
				return undefined
			}
		}
		for _, e := range arr {
			e = normalize(e)
			if equal(e, vals[1]) || (partial && partialMatch(e, vals[1])) {
				return true
			}
		}
		return false
	}
	return undefined
}

func (c callExpr) String() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.String()
	}
	return c.name + "(" + strings.Join(parts, ", ") + ")"
}

// countExpr is COUNT(e); Aggregate supplies its value.
type countExpr struct{ e expr }

func (c countExpr) eval(doc map[string]any) any {
	if v, ok := doc[countKey]; ok {
		return v
	}
	return undefined
}

func (c countExpr) String() string { return "COUNT(" + c.e.String() + ")" }

// countKey carries the aggregate's value into the evaluation of the
// selection around it (no document property can hold this name's value
// during an aggregate's evaluation: the document there is synthetic).
const countKey = "\x00count"

func partialMatch(elem, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return false
	}
	e, ok := elem.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		if ev, ok := e[k]; !ok || !equal(normalize(ev), v) {
			return false
		}
	}
	return true
}
