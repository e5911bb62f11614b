import { ConfigError } from '../infra/config.js';

/** Runs a command-line task: a clear one-line message and exit code 1 on failure. */
export async function runCli(task: () => Promise<void>): Promise<void> {
  try {
    await task();
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : error);
    process.exitCode = 1;
  }
}
