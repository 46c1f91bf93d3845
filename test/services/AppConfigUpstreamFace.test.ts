import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option } from "effect"
import { appSettings, describeConfigError } from "../../src/services/AppConfig.js"

const load = (env: Record<string, string>) =>
  Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries({ LOG_FORMAT: "json", ...env }))))
    .pipe(Effect.either)

describe("AppConfig: BELAY_IDENTD_LISTEN and BELAY_UPSTREAM_SOURCE", () => {
  it.effect("both off by default", () =>
    Effect.gen(function*() {
      const s = Either.getOrThrow(yield* load({}))
      expect(Option.isNone(s.identdListen)).toBe(true)
      expect(Option.isNone(s.upstreamSource)).toBe(true)
    }))

  it.effect("reads host:port and a CIDR", () =>
    Effect.gen(function*() {
      const s = Either.getOrThrow(yield* load({ BELAY_IDENTD_LISTEN: "0.0.0.0:113", BELAY_UPSTREAM_SOURCE: " 2001:db8:7::/64 " }))
      expect(s.identdListen).toEqual(Option.some({ host: "0.0.0.0", port: 113 }))
      expect(Option.map(s.upstreamSource, (r) => [r.text, r.family, r.capacity])).toEqual(
        Option.some(["2001:db8:7::/64", 6, 2n ** 64n - 1n])
      )
      const v6 = Either.getOrThrow(yield* load({ BELAY_IDENTD_LISTEN: "[::]:113" }))
      expect(v6.identdListen).toEqual(Option.some({ host: "::", port: 113 }))
    }))

  it.effect.each<[string, string]>([
    ["BELAY_IDENTD_LISTEN", "113"],
    ["BELAY_IDENTD_LISTEN", "0.0.0.0:70000"],
    ["BELAY_IDENTD_LISTEN", "0.0.0.0:113 extra"],
    ["BELAY_UPSTREAM_SOURCE", "127.0.0.1"],
    ["BELAY_UPSTREAM_SOURCE", "127.0.0.1/32"],
    ["BELAY_UPSTREAM_SOURCE", "10.0.0.0/8,10.1.0.0/16"],
    ["BELAY_UPSTREAM_SOURCE", "fe80::/200"]
  ])("%s=%s stops start-up with one line naming it", ([name, value]) =>
    Effect.gen(function*() {
      const result = yield* load({ [name]: value })
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        const line = describeConfigError(result.left)
        expect(line).toContain(name)
        expect(line).not.toContain("\n")
      }
    }))
})
