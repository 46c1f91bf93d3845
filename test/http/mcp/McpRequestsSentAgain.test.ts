/**
 * POST /mcp requests sent again on one keep-alive connection under other ids, as agents poll (RequestTemplates,
 * docs/decisions/http-and-mcp.md "A request sent again is not parsed again"): each is answered as a request read
 * afresh would be — its own id, its own credential, its own headers checked — against the real app in-process with
 * fake network actors.
 */
import * as Net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { seedAccount, startTestApp } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

interface Answer {
  readonly status: number
  readonly json: { readonly id?: unknown; readonly result?: Record<string, unknown>; readonly error?: { readonly code: number } }
}

/** One keep-alive connection to `url`; `post` sends a POST /mcp on it and reads the whole answer. */
const connection = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Net.Socket>((resolve, reject) => {
        const target = new URL(url)
        const socket = Net.connect(Number(target.port), target.hostname, () => resolve(socket))
        socket.once("error", reject)
      })
    ),
    (socket) => Effect.sync(() => socket.destroy())
  ).pipe(Effect.map((socket) => {
    let received = Buffer.alloc(0)
    const post = (body: string, headers: Record<string, string>) =>
      Effect.promise(() =>
        new Promise<Answer>((resolve, reject) => {
          const onData = (chunk: Buffer) => {
            received = Buffer.concat([received, chunk])
            const end = received.indexOf("\r\n\r\n")
            if (end < 0) return
            const head = received.subarray(0, end).toString("latin1")
            const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
            if (received.length < end + 4 + length) return
            const text = received.subarray(end + 4, end + 4 + length).toString("utf8")
            received = received.subarray(end + 4 + length)
            socket.off("data", onData)
            socket.off("close", onClose)
            resolve({ status: Number(head.slice(9, 12)), json: JSON.parse(text) })
          }
          const onClose = () => reject(new Error("the connection closed"))
          socket.on("data", onData)
          socket.once("close", onClose)
          const lines = Object.entries({ ...headers, "content-type": "application/json" }).map(([k, v]) => `${k}: ${v}\r\n`)
          socket.write(`POST /mcp HTTP/1.1\r\nhost: test\r\n${lines.join("")}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
        })
      )
    return { post } as const
  }))

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

describe(`POST /mcp requests sent again on one connection, on ${describeMode}`, () => {
  it.scoped("answer with their own id, credential and header checks", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const alice = yield* seedAccount(app)
      const bob = yield* seedAccount(app, { name: "bob", scope: "read" })
      const { post } = yield* connection(app.url)
      const as = (token: string) => ({ authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-11-25" })

      // tools/list, the 2025 era: each answer carries its request's id; a read token on the same connection still
      // gets the read tools only.
      const list = (id: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: {} })
      const first = yield* post(list(1), as(alice.token))
      expect(first.status).toBe(200)
      const tools = (first.json.result?.["tools"] as ReadonlyArray<unknown>).length
      for (const id of [2, 1000, "req-7", -3]) {
        const again = yield* post(list(id), as(alice.token))
        expect(again.status).toBe(200)
        expect(again.json.id).toBe(id)
        expect(again.json.result).toEqual(first.json.result)
      }
      const read = yield* post(list(5), as(bob.token))
      expect(read.json.id).toBe(5)
      expect((read.json.result?.["tools"] as ReadonlyArray<unknown>).length).toBeLessThan(tools)
      // A literal JSON.parse reads as another value is not taken for the kept request's id.
      const leading = yield* post(list(1).replace("\"id\":1", "\"id\":01"), as(alice.token))
      expect(leading.status).toBe(400)
      expect(leading.json.error?.code).toBe(-32700)

      // recent_messages, the 2026 era: the same call again answers alike under its own id; another target is
      // another call; a header that no longer mirrors the body is refused even though the body was seen before.
      const recent = (id: unknown, target: string) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: "recent_messages", arguments: { networkId: alice.networkId, target }, _meta: META }
        })
      const modern = {
        authorization: `Bearer ${alice.token}`,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "recent_messages"
      }
      const a = yield* post(recent(1, "#a"), modern)
      expect(a.status).toBe(200)
      expect(a.json.result?.["structuredContent"]).toMatchObject({ target: "#a" })
      const again = yield* post(recent("two", "#a"), modern)
      expect(again.json.id).toBe("two")
      expect(again.json.result).toEqual(a.json.result)
      const b = yield* post(recent(3, "#b"), modern)
      expect(b.json.id).toBe(3)
      expect(b.json.result?.["structuredContent"]).toMatchObject({ target: "#b" })
      const mismatched = yield* post(recent(4, "#a"), { ...modern, "mcp-name": "list_networks" })
      expect(mismatched.status).toBe(400)
      expect(mismatched.json).toMatchObject({ id: 4, error: { code: -32020 } })
      const legacyHeader = yield* post(recent(6, "#a"), { ...modern, "mcp-protocol-version": "2025-11-25" })
      expect(legacyHeader.status).toBe(400)
      expect(legacyHeader.json).toMatchObject({ id: 6, error: { code: -32020 } })
      // The checks follow each request's own headers: right again after a refusal, refused again without Mcp-Method.
      const right = yield* post(recent(7, "#a"), modern)
      expect(right.status).toBe(200)
      expect(right.json.result).toEqual(a.json.result)
      const { "mcp-method": _, ...noMethod } = modern
      const missing = yield* post(recent(9, "#a"), noMethod)
      expect(missing.status).toBe(400)
      expect(missing.json).toMatchObject({ id: 9, error: { code: -32020 } })
      const unknown = yield* post(recent(8, "#a"), { ...modern, authorization: "Bearer belay_not-a-token-at-all-0000" })
      expect(unknown.status).toBe(401)
    }))
})
