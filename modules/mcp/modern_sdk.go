package mcp

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeModernAnswer writes the response to a call: an error, or the result
// as the SDK's stateless server writes one in 2026-07-28 — the server's
// identity added to _meta, resultType "complete" after the result's members
// (CallToolResult.MarshalJSON's order).
func writeModernAnswer(w http.ResponseWriter, status int, id jsonrpc.ID, res *mcpsdk.CallToolResult, rpcErr error, impl *mcpsdk.Implementation) {
	var data []byte
	var err error
	if rpcErr != nil || res == nil {
		data, err = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: rpcErr})
	} else if len(res.Meta) == 0 && impl != nil {
		var info []byte // _meta is CallToolResult's first member
		if info, err = serverInfoMember(impl); err == nil {
			data, err = encodeResult(id, res, info, true)
		}
	} else {
		r := *res
		meta := make(mcpsdk.Meta, len(r.Meta)+1)
		for k, v := range r.Meta {
			meta[k] = v
		}
		if _, ok := meta[metaServerInfo]; !ok {
			meta[metaServerInfo] = impl
		}
		r.Meta = meta
		data, err = encodeCallAnswer(id, &r, nil, true)
	}
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	w.Header()["Cache-Control"] = noCache
	sharedWriter.Write(w, status, data)
}

// serverInfoMember is `"_meta":{"…/serverInfo":impl},` as the SDK writes
// it, encoded once per Implementation.
func serverInfoMember(impl *mcpsdk.Implementation) ([]byte, error) {
	if v, ok := serverInfoCache.Load(impl); ok {
		return v.([]byte), nil
	}
	enc, err := marshalUnescaped(mcpsdk.Meta{metaServerInfo: impl})
	if err != nil {
		return nil, err
	}
	b := slices.Concat([]byte(`"_meta":`), []byte(enc), []byte(","))
	serverInfoCache.Store(impl, b)
	return b, nil
}

var serverInfoCache sync.Map // *mcpsdk.Implementation → []byte

// tierKey carries a modern request's tier server to statelessServerOf.
type tierKey struct{}

// statelessServerOf is the stateless SDK handler's getServer.
func statelessServerOf(r *http.Request) *mcpsdk.Server {
	s, _ := r.Context().Value(tierKey{}).(*mcpsdk.Server)
	return s
}

// maxTierServers bounds the servers kept, one per distinct family set (the
// configuration's tiers); a family set past it gets a server of its own for
// the request.
const maxTierServers = 256

// tierServers are the stateless SDK servers of one configuration.
type tierServers struct {
	mu sync.Mutex
	m  map[string]*mcpsdk.Server
}

// tierServer is the stateless server of a family set: its tools (never
// called through it: civic_mcp answers every modern tools/call), every
// revision served, list results private to the tier (setCacheable).
func (h *Handler) tierServer(families string) *mcpsdk.Server {
	h.tiers.mu.Lock()
	defer h.tiers.mu.Unlock()
	if s := h.tiers.m[families]; s != nil {
		return s
	}
	srv := mcpsdk.NewServer(h.impl, &mcpsdk.ServerOptions{
		SupportedProtocolVersions: allVersions,
		Capabilities:              &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}}, // listen.go
		SetCacheable:              setCacheable,
	})
	for _, t := range h.tools.For(families) {
		srv.AddTool(t, unreachable)
	}
	if len(h.tiers.m) < maxTierServers {
		h.tiers.m[families] = srv
	}
	return srv
}

// unreachable is the tool handler of a stateless server.
func unreachable(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	return toolError("The call was not run."), nil
}

// setCacheable is every server's ServerOptions.SetCacheable: a tool list
// differs per tier, so it is private to the caller; discovery says the same
// to everyone.
func setCacheable(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
	c.TTLMs = listTTLMillis
	c.CacheScope = "public"
	if _, ok := req.(*mcpsdk.ListToolsRequest); ok {
		c.CacheScope = "private"
	}
}
