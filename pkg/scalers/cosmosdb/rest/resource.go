package rest

import (
	"context"
	"strings"
)

// Resource is what a request addresses: its URL, and the resource type and
// link a master-key signature covers. For a resource path such as
// dbs/d/colls/c the type is the next-to-last segment and the link the whole
// path; for a feed such as dbs/d/colls/c/docs the type is the feed's last
// segment and the link its parent. The link is built from the unescaped
// names, as the REST API signs them.
type Resource struct {
	URL  string
	Type string
	Link string
}

// Resource returns the resource at the path of unescaped segments, e.g.
// ("dbs", db, "colls", coll, "docs"). Callers that send many requests to one
// resource build it once.
func (c *Client) Resource(segments ...string) *Resource {
	r := &Resource{URL: c.account.Endpoint.JoinPath(segments...).String()}
	switch n := len(segments); {
	case n == 0:
	case n%2 == 0:
		r.Type, r.Link = segments[n-2], strings.Join(segments, "/")
	default:
		r.Type, r.Link = segments[n-1], strings.Join(segments[:n-1], "/")
	}
	return r
}

type resourceKey struct{}

// withResource carries the resource with the request, for the signing policy.
func withResource(ctx context.Context, r *Resource) context.Context {
	return context.WithValue(ctx, resourceKey{}, r)
}

func resourceOf(ctx context.Context) (*Resource, bool) {
	r, ok := ctx.Value(resourceKey{}).(*Resource)
	return r, ok
}
