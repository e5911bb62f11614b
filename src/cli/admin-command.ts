import { InvalidPhoneError, type RoleChange, type RoleService, UnknownUserError } from '../modules/users/index.js';

export const ADMIN_USAGE = `usage: npm run admin -- <command>
  grant <phone>    make the user with this phone an administrator (created if the phone never logged in)
  revoke <phone>   make that user a plain user again
  list             list the administrators`;

export interface CommandOutput {
  log(line: string): void;
  error(line: string): void;
}

/**
 * `npm run admin` without the process around it: runs one command and returns the exit code
 * (0 done, 2 bad input: unknown command, missing or invalid phone, no such user).
 */
export async function runAdminCommand(args: readonly string[], roles: RoleService, out: CommandOutput): Promise<number> {
  const [command, phone, ...extra] = args;
  const needsPhone = command === 'grant' || command === 'revoke';
  if (command === 'list' && phone === undefined) {
    const admins = await roles.listAdmins();
    if (admins.length === 0) out.log('No administrators yet: npm run admin -- grant <phone>');
    for (const admin of admins) out.log(`${admin.phone}  user ${admin.id}  ${admin.nick_name}`);
    return 0;
  }
  if (!needsPhone || phone === undefined || extra.length > 0) {
    out.error(command === undefined || needsPhone || command === 'list' ? ADMIN_USAGE : `admin: unknown command ${JSON.stringify(command)}\n${ADMIN_USAGE}`);
    return 2;
  }
  try {
    const change = command === 'grant' ? await roles.grant(phone) : await roles.revoke(phone);
    out.log(describe(change));
    return 0;
  } catch (error) {
    if (error instanceof InvalidPhoneError || error instanceof UnknownUserError) {
      out.error(`admin: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

function describe({ user, role, created, changed, sessionsUpdated }: RoleChange): string {
  const who = `${user.phone} (user ${user.id}, ${user.nick_name})`;
  const what = role === 'admin' ? 'is an administrator' : 'is no longer an administrator';
  const news = created ? ' (new user)' : changed ? '' : ' (unchanged)';
  const sessions = sessionsUpdated === 1 ? '1 live session' : `${sessionsUpdated} live sessions`;
  return `${who} ${what}${news}; ${sessions} updated`;
}
