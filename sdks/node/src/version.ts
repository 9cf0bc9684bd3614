/** Kept equal to package.json "version" (a test checks). */
export const VERSION = '0.1.0';
