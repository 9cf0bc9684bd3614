/**
 * The service's rule for a new portal password (12 to 200 characters), checked in the browser
 * before a form is sent, with the confirmation field. The service checks again and has the last
 * word: its message is what the form shows when it refuses.
 */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 200;

export const NEW_PASSWORD_HINT = `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters. A passphrase works well.`;

export interface NewPasswordProblems {
  password: string | null;
  confirm: string | null;
}

/** What is wrong with a new password and its confirmation (both null when they can be sent). */
export function newPasswordProblems(password: string, confirm: string): NewPasswordProblems {
  // Counted as the service counts them: in code points (an emoji is one character).
  const length = [...password].length;
  const problem =
    length < PASSWORD_MIN_LENGTH
      ? `Use at least ${PASSWORD_MIN_LENGTH} characters.`
      : length > PASSWORD_MAX_LENGTH
        ? `Use at most ${PASSWORD_MAX_LENGTH} characters.`
        : null;
  return { password: problem, confirm: confirm !== password ? 'The two passwords are not the same.' : null };
}
