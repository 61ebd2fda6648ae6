package cosmossql

import (
	"strconv"
	"strings"
)

// orderByFilterPlaceholder is where the SDKs put their resume condition in
// a rewritten ORDER BY query ("true" on the first page).
const orderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}"

// NeedsPartitionedExecution reports whether a cross-partition run of the
// query needs the SDK to merge per-range results (ORDER BY, TOP, an
// aggregate): the service then answers the plain query with 400 / substatus
// 1004 and the execution info, and the SDKs ask for it up front with a
// query-plan request.
func (q *Query) NeedsPartitionedExecution() bool {
	return q.orderBy != nil || q.top >= 0 || q.aggregate != ""
}

// PartitionedExecutionInfo is the service's query plan
// (partitionedQueryExecutionInfo) for the query: what the SDKs merge and the
// query each range runs. Every query covers the whole key space here (the
// plan does not narrow the ranges by a partition key filter).
func (q *Query) PartitionedExecutionInfo() map[string]any {
	info := map[string]any{
		"distinctType":                "None",
		"top":                         nil,
		"offset":                      nil,
		"limit":                       nil,
		"orderBy":                     []string{},
		"orderByExpressions":          []string{},
		"groupByExpressions":          []string{},
		"groupByAliases":              []string{},
		"aggregates":                  []string{},
		"groupByAliasToAggregateType": map[string]any{},
		"rewrittenQuery":              q.rewritten(),
		"hasSelectValue":              q.value != nil,
		"hasNonStreamingOrderBy":      false,
	}
	if q.top >= 0 {
		info["top"] = q.top
	}
	if q.orderBy != nil {
		dir := "Ascending"
		if q.desc {
			dir = "Descending"
		}
		info["orderBy"] = []string{dir}
		info["orderByExpressions"] = []string{q.orderBy.String()}
	}
	if q.aggregate != "" {
		info["aggregates"] = []string{q.aggregate}
	}
	return map[string]any{
		"partitionedQueryExecutionInfoVersion": 2,
		"queryInfo":                            info,
		"queryRanges":                          []map[string]any{{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}},
	}
}

// rewritten is the query each range runs, in the service's shapes: ORDER BY
// queries return {_rid, orderByItems: [{item}], payload}; an aggregate
// returns [{item: partial}]. Parameters are inlined as literals, so the
// text stands alone. "" means: run the original query.
func (q *Query) rewritten() string {
	top := ""
	if q.top >= 0 {
		top = "TOP " + strconv.Itoa(q.top) + " "
	}
	where := ""
	if q.where != nil {
		where = q.where.String()
	}
	switch {
	case q.orderBy != nil:
		var b strings.Builder
		b.WriteString("SELECT " + top + q.alias + "._rid, [{\"item\": " + q.orderBy.String() + "}] AS orderByItems, " + q.payload() + " AS payload FROM " + q.alias)
		b.WriteString(" WHERE (" + orderByFilterPlaceholder + ")")
		if where != "" {
			b.WriteString(" AND " + where)
		}
		b.WriteString(" ORDER BY " + q.orderBy.String())
		if q.desc {
			b.WriteString(" DESC")
		}
		return b.String()
	case q.aggregate != "" && q.value != nil:
		s := "SELECT VALUE [{\"item\": COUNT(" + q.countArg().String() + ")}] FROM " + q.alias
		if where != "" {
			s += " WHERE " + where
		}
		return s
	}
	return ""
}

// payload is the selection as one expression.
func (q *Query) payload() string {
	switch {
	case q.star:
		return q.alias
	case q.value != nil:
		return q.value.String()
	}
	return objectExpr{keys: fieldNames(q.fields), values: fieldExprs(q.fields)}.String()
}

func fieldNames(fs []projection) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

func fieldExprs(fs []projection) []expr {
	out := make([]expr, len(fs))
	for i, f := range fs {
		out[i] = f.e
	}
	return out
}
