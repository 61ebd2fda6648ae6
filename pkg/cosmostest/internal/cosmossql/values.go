package cosmossql

import (
	"encoding/json"
	"reflect"
	"strings"
)

// normalize turns a parameter value into the types encoding/json decodes
// into (float64 for every number), so that comparisons see one type.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func equal(a, b any) bool { return reflect.DeepEqual(normalize(a), normalize(b)) }

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// typeRank orders values of different types as ORDER BY does.
func typeRank(v any) int {
	switch v.(type) {
	case undefinedType:
		return 0
	case nil:
		return 1
	case bool:
		return 2
	case float64:
		return 3
	case string:
		return 4
	case []any:
		return 5
	}
	return 6
}

// compareValues orders two values: by type rank, then by value.
func compareValues(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case bool:
		return compareBool(x, b.(bool))
	case float64:
		return compareFloat(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	}
	return 0
}
