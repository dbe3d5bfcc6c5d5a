// Starts the built switchman binary on its demo configuration for SDK tests.
// SWITCHMAN_BIN names the binary (scripts/test sets it).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LISTENING = /^Switchman listening on (http:\/\/127\.0\.0\.1:\d+)\s*$/m;

// Spawns `$SWITCHMAN_BIN --headless --demo --listen 127.0.0.1:0`, waits for the
// line "Switchman listening on http://127.0.0.1:PORT" and returns
// { baseUrl, stop, output }. Fails fast when the process exits first, and
// after startTimeoutMs when it never prints the line.
// With `config` (a configuration object), the gateway runs on that instead of the demo:
// it is written to a temporary file, and `env` is added to the child's environment (for
// the env:VAR credentials the configuration names).
export async function startGateway({ startTimeoutMs = 15000, config, env = {} } = {}) {
  const bin = process.env.SWITCHMAN_BIN;
  if (!bin) {
    throw new Error('SWITCHMAN_BIN is not set: point it at the built switchman binary (scripts/test does)');
  }
  let configDir;
  let args = ['--headless', '--demo', '--listen', '127.0.0.1:0'];
  if (config) {
    configDir = mkdtempSync(join(tmpdir(), 'switchman-client-'));
    const configPath = join(configDir, 'config.json');
    writeFileSync(configPath, JSON.stringify(config));
    args = ['--headless', '--config', configPath, '--listen', '127.0.0.1:0'];
  }
  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  child.on('exit', () => {
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });
  let stdout = '';
  let stderr = '';
  let exited = false;
  const exit = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    });
  });
  // Never outlive the test process, even when a runner timeout skips stop().
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.on('exit', () => process.removeListener('exit', killOnExit));
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });

  const describeOutput = () => `\n--- switchman stdout ---\n${stdout}\n--- switchman stderr ---\n${stderr}`;
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exit;
    clearTimeout(timer);
  };

  let timer;
  try {
    const baseUrl = await new Promise((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`switchman printed no "Switchman listening on" line within ${startTimeoutMs} ms`)),
        startTimeoutMs,
      );
      child.on('error', (error) => reject(new Error(`cannot start ${bin}: ${error.message}`)));
      exit.then(({ code, signal }) =>
        reject(new Error(`switchman exited before listening (code ${code}, signal ${signal})`)),
      );
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
        const match = stdout.match(LISTENING);
        if (match) resolve(match[1]);
      });
    });
    return { baseUrl, stop, output: () => ({ stdout, stderr }) };
  } catch (error) {
    await stop();
    error.message += describeOutput();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

// A fetch that replaces every request body with broken JSON, so an SDK sends
// what the gateway must refuse with a 400 before contacting any upstream.
export function malformedJsonFetch(url, init = {}) {
  return fetch(url, { ...init, body: '{"model": "demo", "messages": [' });
}

export const SDK_TIMEOUT_MS = 20000;
export const TEST_TIMEOUT_MS = 30000;
