// The official TypeScript MCP client (@modelcontextprotocol/client 2.4.0) at
// revision 2026-07-28 as a client of civicgate's /v1/mcp: connect with the
// key as a bearer, list the tools (every page), call one tool, and print
// what it got as one JSON document on stdout. Every request goes to the next
// of the given endpoints in turn (gateways without affinity). Any error ends
// the process with status 1 and one line on stderr (never the key).
// e2e/mcp_2026_test.go runs it:
//
//   node client.mjs <url>[,<url>…] <key> <pin|auto> <tool> <arguments as JSON>
//
// The gateways' certificates are trusted through NODE_EXTRA_CA_CERTS.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [urls, key, mode, tool, rawArgs] = process.argv.slice(2);

function fail(message) {
  const text = key ? String(message).split(key).join("<key>") : String(message);
  process.stderr.write(`client.mjs: ${text}\n`);
  process.exit(1);
}

async function main() {
  if (!urls || !key || !mode || !tool || !rawArgs) {
    fail("usage: node client.mjs <url>[,<url>…] <key> <pin|auto> <tool> <arguments as JSON>");
  }
  const endpoints = urls.split(",");
  const args = JSON.parse(rawArgs);
  const served = endpoints.map(() => 0);
  const sessions = [];
  let next = 0;
  // Each request to the next endpoint, whatever URL the transport asked for.
  const alternate = async (input, init) => {
    const i = next++ % endpoints.length;
    served[i]++;
    const response = await fetch(endpoints[i], init);
    const sid = response.headers.get("mcp-session-id");
    if (sid) sessions.push(sid.length);
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(endpoints[0]), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: alternate,
  });
  const client = new Client(
    { name: "civicgate-e2e-node2026", version: "1.0.0" },
    { versionNegotiation: { mode: mode === "pin" ? { pin: "2026-07-28" } : "auto" } },
  );
  await client.connect(transport);

  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);

  const calls = [];
  for (let i = 0; i < 4; i++) {
    calls.push(await client.callTool({ name: tool, arguments: args }));
  }

  const out = {
    protocolVersion: transport.protocolVersion ?? null,
    session: transport.sessionId !== undefined || sessions.length > 0,
    served,
    tools,
    calls,
  };
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => fail(err && err.message ? err.message : err));
