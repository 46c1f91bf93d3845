/**
 * The official TypeScript SDK's 2.x client (@modelcontextprotocol/client 2.4.0, Node ≥ 20) against the real app
 * in-process with scripted network actors, in each of its version-negotiation modes: `legacy` (the 2025 initialize
 * handshake), `auto` (probes server/discover and must end on 2026-07-28 against Belay) and pinned to 2026-07-28. In
 * each, it lists the 23 tools (validating every result's structuredContent against the listed outputSchema) and calls
 * a read tool and a write tool. The 1.x client has its own file (McpTools.sdk.test.ts).
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { seedAccount, startTestApp } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

type Mode = "legacy" | "auto" | { readonly pin: string }

/** What each mode must end on against Belay: the era and the version. */
const MODES: ReadonlyArray<readonly [string, Mode, string]> = [
  ["legacy", "legacy", "2025-11-25"],
  ["auto", "auto", "2026-07-28"],
  ["pinned 2026-07-28", { pin: "2026-07-28" }, "2026-07-28"]
]

const connect = (url: string, token: string, mode: Mode) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "belay-test", version: "1.0.0" }, { versionNegotiation: { mode } })
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

describe(`MCP through the SDK 2.4.0 client on ${describeMode}`, () => {
  for (const [label, mode, version] of MODES) {
    it.scoped(`${label}: ends on ${version}, lists 23 tools, calls a read and a write tool`, () =>
      Effect.gen(function*() {
        const app = yield* startTestApp()
        const { networkId, token } = yield* seedAccount(app)
        const client = yield* connect(app.url, token, mode)
        expect(client.getNegotiatedProtocolVersion()).toBe(version)
        expect(client.getServerVersion()?.name).toBe("belay")

        const tools = yield* Effect.promise(() => client.listTools())
        expect(tools.tools).toHaveLength(23)
        expect(tools.tools.map((t) => t.name)).toContain("send_message")

        const networks = yield* Effect.promise(() => client.callTool({ name: "list_networks", arguments: {} }))
        expect(networks.isError).not.toBe(true)
        expect(networks.structuredContent).toMatchObject({ networks: [{ id: networkId, name: "testnet", state: "offline" }] })

        // The write tool: refused while the network is offline, sent once it is connected.
        const offline = yield* Effect.promise(() =>
          client.callTool({ name: "send_message", arguments: { networkId, target: "#belay", text: "hello" } })
        )
        expect(offline.isError).toBe(true)
        expect(offline.structuredContent).toMatchObject({ ok: false, error: "not-connected" })
        app.fake.network(networkId).status = { state: "connected", nick: "alice" }
        const sent = yield* Effect.promise(() =>
          client.callTool({ name: "send_message", arguments: { networkId, target: "#belay", text: "hello" } })
        )
        expect(sent.isError).not.toBe(true)
        expect(sent.structuredContent).toEqual({ ok: true })
        expect(yield* app.fake.calls).toContainEqual({ method: "say", networkId, args: ["privmsg", "#belay", "hello"] })
      }), { timeout: 60_000 })
  }
})
