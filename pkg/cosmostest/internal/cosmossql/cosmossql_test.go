package cosmossql

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func docs(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	raw := `[
	 {"id":"a","n":1,"s":"alpha","tags":["red","blue"],"o":{"k":1},"items":[{"x":1,"y":2}],"flag":true},
	 {"id":"b","n":2,"s":"beta","tags":["green"],"o":{"k":2},"nul":null},
	 {"id":"c","n":3,"s":"Gamma","tags":[],"o":{"k":"3"}},
	 {"id":"d","s":"delta"}
	]`
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func matchingIDs(t *testing.T, q *Query, all []map[string]any) []string {
	t.Helper()
	var out []string
	for _, d := range all {
		if q.Match(d) {
			out = append(out, d["id"].(string))
		}
	}
	return out
}

func TestWhereSelectsTheItemsTheServiceWould(t *testing.T) {
	params := []Param{{Name: "@s", Value: "beta"}, {Name: "@n", Value: 2}, {Name: "@tag", Value: "red"}}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"SELECT * FROM c", []string{"a", "b", "c", "d"}},
		{"SELECT * FROM c WHERE c.s = @s", []string{"b"}},
		{"SELECT * FROM c WHERE c.n >= @n", []string{"b", "c"}},
		{"SELECT * FROM c WHERE c.n != 1", []string{"b", "c"}},     // d has no n: undefined, dropped
		{"SELECT * FROM c WHERE c.n <> 1", []string{"b", "c"}},     // the other spelling
		{"SELECT * FROM c WHERE c.o.k = 1", []string{"a"}},         // nested path
		{"SELECT * FROM c WHERE c['o']['k'] = '3'", []string{"c"}}, // bracket path, type-strict
		{"SELECT * FROM c WHERE c.n < 'x'", nil},                   // mixed types are undefined
		{"SELECT * FROM c WHERE NOT (c.n < 'x')", nil},             // NOT undefined is undefined
		{"SELECT * FROM c WHERE (c.n = 1 OR c.n = 3) AND NOT c.s = 'alpha'", []string{"c"}},
		{"SELECT * FROM c WHERE c.n = 1 OR c.missing = 1", []string{"a"}}, // true OR undefined
		{"SELECT * FROM c WHERE STARTSWITH(c.id, 'a')", []string{"a"}},
		{"SELECT * FROM c WHERE STARTSWITH(c.s, 'gam', true)", []string{"c"}},
		{"SELECT * FROM c WHERE ENDSWITH(c.s, 'ta')", []string{"b", "d"}},
		{"SELECT * FROM c WHERE CONTAINS(c.s, 'elt')", []string{"d"}},
		{"SELECT * FROM c WHERE IS_DEFINED(c.n)", []string{"a", "b", "c"}},
		{"SELECT * FROM c WHERE NOT IS_DEFINED(c.n)", []string{"d"}},
		{"SELECT * FROM c WHERE IS_NULL(c.nul)", []string{"b"}},
		{"SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, @tag)", []string{"a"}},
		{`SELECT * FROM c WHERE ARRAY_CONTAINS(c.items, {"x": 1}, true)`, []string{"a"}},
		{`SELECT * FROM c WHERE ARRAY_CONTAINS(c.items, {"x": 1})`, nil},
		{"SELECT * FROM c WHERE c.id IN ('a', 'c')", []string{"a", "c"}},
		{"SELECT * FROM c WHERE c.id NOT IN ('a', 'c')", []string{"b", "d"}},
		{"SELECT * FROM c WHERE c.flag", []string{"a"}},
		{"SELECT * FROM root r WHERE r.n = 2", []string{"b"}},
		{"select * from c where c.n > 1.5 and c.n < 2.5", []string{"b"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := Parse(tc.query, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := matchingIDs(t, q, docs(t)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnsupportedConstructsAreNamed(t *testing.T) {
	for _, tc := range []struct{ query, construct string }{
		{"SELECT c.s, COUNT(1) FROM c GROUP BY c.s", "GROUP BY"},
		{"SELECT * FROM c JOIN t IN c.tags", "JOIN"},
		{"SELECT DISTINCT c.s FROM c", "DISTINCT"},
		{"SELECT * FROM c OFFSET 1 LIMIT 2", "OFFSET LIMIT"},
		{"SELECT * FROM c WHERE LOWER(c.s) = 'a'", "function LOWER"},
		{"SELECT VALUE SUM(c.n) FROM c", "aggregate SUM"},
		{"SELECT * FROM c WHERE c.n + 1 = 2", "operator +"},
		{"SELECT * FROM c WHERE c.n BETWEEN 1 AND 2", "BETWEEN"},
		{"SELECT * FROM c ORDER BY c.n, c.s", "ORDER BY on more than one path"},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)", "EXISTS"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, err := Parse(tc.query, nil)
			e, ok := err.(*queryError)
			if !ok || e.Construct != tc.construct {
				t.Fatalf("got %v, want an error naming %q", err, tc.construct)
			}
			if !strings.Contains(err.Error(), tc.construct) {
				t.Errorf("the message %q does not name %q", err, tc.construct)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, q := range []string{"", "SELECT", "SELECT * FROM", "SELECT * FROM c WHERE", "SELECT * FROM c WHERE c.s = @missing",
		"SELECT * FROM c WHERE x.s = 1", "SELECT * FROM c WHERE c.s = 'open", "SELECT * FROM c trailing junk", "DELETE FROM c"} {
		if _, err := Parse(q, nil); err == nil {
			t.Errorf("%q parsed", q)
		}
	}
}

func run(t *testing.T, text string) []any {
	t.Helper()
	q, err := Parse(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	var matching []map[string]any
	for _, d := range docs(t) {
		if q.Match(d) {
			matching = append(matching, d)
		}
	}
	if q.IsAggregate() {
		return []any{q.Aggregate(matching)}
	}
	q.sortDocs(matching)
	if n := q.Top(); n >= 0 && n < len(matching) {
		matching = matching[:n]
	}
	var out []any
	for _, d := range matching {
		if v, ok := q.Project(d); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestSelectionOrderTopAndCount(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"SELECT VALUE c.id FROM c ORDER BY c.n", `["d","a","b","c"]`}, // undefined sorts first
		{"SELECT VALUE c.id FROM c ORDER BY c.n DESC", `["c","b","a","d"]`},
		{"SELECT VALUE c.id FROM c ORDER BY c.s", `["c","a","b","d"]`}, // ordinal: "Gamma" < "alpha"
		{"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n DESC", `["c","b"]`},
		{"SELECT VALUE c.n FROM c", `[1,2,3]`}, // undefined results are left out
		{"SELECT c.id, c.o.k AS k FROM c WHERE c.n = 1", `[{"id":"a","k":1}]`},
		{"SELECT VALUE COUNT(1) FROM c", `[4]`},
		{"SELECT VALUE COUNT(c.n) FROM c", `[3]`},
		{"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1", `[2]`},
		{"SELECT COUNT(1) AS n FROM c", `[{"n":4}]`},
		{`SELECT VALUE [{"item": COUNT(1)}] FROM c WHERE c.n > 1`, `[[{"item":2}]]`},
		{`SELECT c._rid, [{"item": c.n}] AS orderByItems, c.id AS payload FROM c WHERE (true) AND c.n > 1 ORDER BY c.n`,
			`[{"orderByItems":[{"item":2}],"payload":"b"},{"orderByItems":[{"item":3}],"payload":"c"}]`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got, _ := json.Marshal(run(t, tc.query))
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlanRewritesWhatTheSDKsMerge(t *testing.T) {
	q, err := Parse("SELECT TOP 3 * FROM c WHERE c.s = @s ORDER BY c.n DESC", []Param{{Name: "@s", Value: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !q.NeedsPartitionedExecution() {
		t.Fatal("ORDER BY needs partitioned execution")
	}
	info := q.PartitionedExecutionInfo()["queryInfo"].(map[string]any)
	if !reflect.DeepEqual(info["orderBy"], []string{"Descending"}) || info["top"] != 3 {
		t.Errorf("queryInfo %v", info)
	}
	rewritten := info["rewrittenQuery"].(string)
	if !strings.Contains(rewritten, orderByFilterPlaceholder) {
		t.Errorf("rewritten query %q has no filter placeholder", rewritten)
	}
	// The SDKs send it back with the placeholder replaced; it must parse.
	back, err := Parse(strings.Replace(rewritten, orderByFilterPlaceholder, "true", 1), nil)
	if err != nil {
		t.Fatalf("the rewritten query %q does not parse: %v", rewritten, err)
	}
	if !back.ordered() || back.Top() != 3 {
		t.Errorf("the rewritten query lost ORDER BY or TOP: %q", rewritten)
	}

	count, _ := Parse("SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.id, 'a')", nil)
	info = count.PartitionedExecutionInfo()["queryInfo"].(map[string]any)
	if !reflect.DeepEqual(info["aggregates"], []string{"Count"}) || info["hasSelectValue"] != true {
		t.Errorf("queryInfo %v", info)
	}
	if _, err := Parse(info["rewrittenQuery"].(string), nil); err != nil {
		t.Errorf("the rewritten count %q does not parse: %v", info["rewrittenQuery"], err)
	}

	plain, _ := Parse("SELECT * FROM c WHERE c.n = 1", nil)
	if plain.NeedsPartitionedExecution() {
		t.Error("a filter needs no partitioned execution")
	}
}
