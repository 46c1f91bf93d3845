/**
 * Flood owns the lines the fake IRC server floods (the ingest section) and how the bench runs the insert baseline as a
 * child process on the server core. The line format is one place so the flood and the baseline store the same rows.
 * Pure apart from `runInsertBaseline`, which owns its child until it exits (bounded).
 */
import * as Child from "node:child_process"
import * as Path from "node:path"
import { nickOf, textOf } from "./Corpus.js"
import { onCore, ROOT, SERVER_CORE } from "./Env.js"

export const FLOOD_TARGET = "#flood"

/** The i-th flooded line, as the server sends it (RFC 1459 §4.4.1 PRIVMSG from a user prefix). */
export const floodLine = (i: number) => `:${nickOf(i)}!u@bench.test PRIVMSG ${FLOOD_TARGET} :${textOf(i)}`

export const runInsertBaseline = (env: Record<string, string>, rows: number, timeoutMs: number, shape: "plain" | "cte" = "plain") =>
  new Promise<{ rows: number; seconds: number }>((resolve, reject) => {
    const script = Path.join(ROOT, "dist-bench/bench/insert-baseline.js")
    const [command, argv] = onCore(SERVER_CORE, [process.execPath, script, JSON.stringify(env), String(rows), shape])
    const child = Child.spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (c) => (out += c))
    child.stderr.on("data", (c) => (err += c))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      if (code !== 0) return reject(new Error(`insert baseline exited ${code}: ${err.slice(-2000)}`))
      try {
        resolve(JSON.parse(out.trim().split("\n").pop()!))
      } catch (e) {
        reject(new Error(`insert baseline printed no result: ${String(e)} ${out.slice(-500)} ${err.slice(-500)}`))
      }
    })
  })
