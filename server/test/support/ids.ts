/** Id shapes the tests check (ADR 0022): version 4 for resources, version 7 for appended rows. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The Unix milliseconds a version 7 id carries in its first 48 bits. */
export const unixMsOfUuid7 = (id: string): number => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
