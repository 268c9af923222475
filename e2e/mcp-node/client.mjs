// The TypeScript MCP SDK as a client of civicgate's /v1/mcp: connect over
// Streamable HTTP with the key as a bearer, list the tools (every page),
// call one tool with arguments, and print what it got as one JSON document
// on stdout. Any error ends the process with status 1 and one line on
// stderr (never the key). e2e/mcp_node_test.go runs it:
//
//   node client.mjs <url> <key> [tool] [arguments as JSON]
//
// tool defaults to search_bills, arguments to {"first":3}. The gateway's
// certificate is trusted through NODE_EXTRA_CA_CERTS.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, tool = "search_bills", rawArgs = '{"first":3}'] = process.argv.slice(2);

function fail(message) {
  const text = key ? String(message).split(key).join("<key>") : String(message);
  process.stderr.write(`client.mjs: ${text}\n`);
  process.exit(1);
}

async function main() {
  if (!url || !key) {
    fail("usage: node client.mjs <url> <key> [tool] [arguments as JSON]");
  }
  let args;
  try {
    args = JSON.parse(rawArgs);
  } catch (err) {
    fail(`arguments are not JSON: ${err.message}`);
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    // A dropped stream is an error here, not something to retry.
    reconnectionOptions: { maxReconnectionDelay: 1000, initialReconnectionDelay: 100, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
  });
  const client = new Client({ name: "civicgate-e2e-node", version: "1.0.0" });
  await client.connect(transport);

  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);

  const result = await client.callTool({ name: tool, arguments: args });

  const out = {
    session: transport.sessionId !== undefined,
    protocolVersion: transport.protocolVersion ?? null,
    serverVersion: client.getServerVersion() ?? null,
    tools,
    call: { name: tool, arguments: args, result },
  };
  // End the session (DELETE) so that it does not hold one of the key's slots.
  await transport.terminateSession();
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => fail(err && err.message ? err.message : err));
