import { ConfigError, loadConfig, type Config } from '../infra/config.js';
import { describeUnavailable } from '../infra/dependencies.js';

/** Exit code of a command that could not run because Redis or MySQL did not answer. */
export const EXIT_UNAVAILABLE = 3;

/** After the task, the process exits within this even if a socket of a silent dependency lingers. */
const EXIT_GRACE_MS = 2_000;

/**
 * Runs a command-line task with the configuration: a clear one-line message on failure, exit code
 * 3 when Redis or MySQL is unreachable or silent (the message names it and its address, never a
 * password), 1 for a bad configuration or another failure.
 */
export async function runCli(name: string, task: (config: Config) => Promise<void>): Promise<void> {
  let config: Config | undefined;
  try {
    config = loadConfig();
    await task(config);
  } catch (error) {
    process.exitCode = failureExitCode(name, error, config);
  }
  setTimeout(() => process.exit(), EXIT_GRACE_MS).unref();
}

/** Prints why a command failed and returns its exit code. */
export function failureExitCode(name: string, error: unknown, config: Config | undefined): number {
  if (error instanceof ConfigError) {
    console.error(`${name}: ${error.message}`);
    return 1;
  }
  const unavailable = config ? describeUnavailable(error, config) : undefined;
  if (unavailable !== undefined) {
    console.error(`${name}: cannot run: ${unavailable}`);
    return EXIT_UNAVAILABLE;
  }
  console.error(`${name}:`, error);
  return 1;
}
