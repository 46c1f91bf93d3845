/**
 * SystemBinary: an external program a system test drives (ngircd, Chromium), at its Debian path
 * or where an environment variable points. Missing on a contributor's machine, the tests that need
 * it are skipped, so the rest of the system suite still runs; missing under `CI=true`, they run
 * and fail naming the program, so CI can never pass without having run them.
 * Pure lookups at import time; no state.
 */
import * as Fs from "node:fs"
import { Effect } from "effect"

export interface SystemBinary {
  readonly name: string
  readonly path: string
  /** For `it.skipIf`: the program is missing and this is not CI. */
  readonly skip: boolean
  /** The path; dies with the program's name and how to install it when it is missing. */
  readonly require: Effect.Effect<string>
}

/** CI providers set `CI=true` (some `CI=1`); anything but empty, `false` or `0` counts. */
export const isCi = (env: NodeJS.ProcessEnv = process.env): boolean => {
  const value = (env.CI ?? "").trim().toLowerCase()
  return value !== "" && value !== "false" && value !== "0"
}

export const systemBinary = (options: {
  readonly name: string
  /** Debian's path, used unless `variable` is set. */
  readonly path: string
  /** The environment variable that overrides the path (another distribution, a local build). */
  readonly variable: string
  /** How to get it, for the failure message. */
  readonly install: string
}): SystemBinary => {
  const override = process.env[options.variable]
  const path = override !== undefined && override !== "" ? override : options.path
  const present = Fs.existsSync(path)
  return {
    name: options.name,
    path,
    skip: !present && !isCi(),
    require: present
      ? Effect.succeed(path)
      : Effect.dieMessage(
        `${options.name} is not installed at ${path} (${options.install}, or set ${options.variable}); ` +
          "the system tests need it under CI"
      )
  }
}
