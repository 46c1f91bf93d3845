/**
 * `soju.im/FILEHOST` (soju's doc/ext/filehost.md) on the IRC listener: the ISUPPORT token names the upload endpoint
 * under PUBLIC_BASE_URL, in place of any the upstream sends, and is absent without a public URL; and the upload as
 * gamja or senpai make it — HTTP Basic with the very user name and secret the client signed in with — answers 201
 * with a Location that serves the bytes.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { isupportTokens } from "../../src/listener/IsupportReply.js"
import { filehostUrl } from "../../src/services/uploads/Uploads.js"
import { freePort } from "../support/BelayProcess.js"
import { PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const URL_OF = "https://belay.example/api/uploads"

describe("soju.im/FILEHOST, the token", () => {
  it("names the endpoint once registered, on a network or the control connection, in place of the upstream's", () => {
    const upstream = { isupport: ["NETWORK=fake", "soju.im/FILEHOST=https://elsewhere.example/up"], caps: ["message-tags"] }
    const bound = isupportTokens(7, upstream, URL_OF)
    expect(bound).toContain(`soju.im/FILEHOST=${URL_OF}`)
    expect(bound.filter((t) => t.startsWith("soju.im/FILEHOST="))).toHaveLength(1)
    expect(isupportTokens(null, undefined, URL_OF)).toContain(`soju.im/FILEHOST=${URL_OF}`)
    // Before registration only the history tokens; without a public URL none at all.
    expect(isupportTokens(undefined, undefined, URL_OF).some((t) => t.startsWith("soju.im/FILEHOST"))).toBe(false)
    expect(isupportTokens(7, upstream, undefined).some((t) => t.startsWith("soju.im/FILEHOST"))).toBe(false)
  })

  it("is the endpoint under PUBLIC_BASE_URL, and nothing without it", () => {
    expect(filehostUrl(Option.some("https://belay.example"))).toEqual(Option.some(URL_OF))
    expect(filehostUrl(Option.none())).toEqual(Option.none())
  })
})

describe(`soju.im/FILEHOST through the listener on ${describeMode}`, () => {
  it.scopedLive("the welcome names the endpoint, and HTTP Basic with the client's own credentials uploads there", () =>
    Effect.gen(function*() {
      const httpPort = yield* freePort
      const base = `http://127.0.0.1:${httpPort}`
      const app = yield* startListenerApp({ env: { PORT: String(httpPort), PUBLIC_BASE_URL: base } })
      const user = "alice/fake@phone"
      const client = yield* welcomedClient(app.port, user, PASSWORD)
      const tokens = client.burst.filter((l) => l.command === "005").flatMap((l) => l.params)
      const token = tokens.find((t) => t.startsWith("soju.im/FILEHOST="))
      expect(token).toBe(`soju.im/FILEHOST=${base}/api/uploads`)

      const endpoint = token!.slice("soju.im/FILEHOST=".length)
      const bytes = randomBytes(100_000)
      const res = yield* Effect.promise(() =>
        fetch(endpoint, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString("base64")}`,
            "content-type": "image/jpeg",
            "content-disposition": "attachment; filename=\"picture.jpeg\""
          },
          body: bytes
        })
      )
      expect(res.status).toBe(201)
      const location = res.headers.get("location")!
      expect(location).toMatch(new RegExp(`^${base}/uploads/[A-Za-z0-9_-]{22}/picture\\.jpeg$`))
      const served = yield* Effect.promise(async () => {
        const r = await fetch(location)
        return { status: r.status, type: r.headers.get("content-type"), body: Buffer.from(await r.arrayBuffer()) }
      })
      expect(served).toMatchObject({ status: 200, type: "image/jpeg" })
      expect(served.body.equals(bytes)).toBe(true)
    }))
})
