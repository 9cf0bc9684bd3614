/**
 * The environment a screen shows, taken from the address (/portal/sandbox/... or /portal/live/...):
 * always explicit, always visible in the header's switch, never remembered silently.
 */
import { useLocation } from './router';

export type Environment = 'sandbox' | 'live';

export function environmentOf(path: string): Environment {
  return path.split('/')[1] === 'live' ? 'live' : 'sandbox';
}

export function useEnvironment(): Environment {
  return environmentOf(useLocation().path);
}

/** The same screen in the other environment (details of one object go back to their list). */
export function switchEnvironmentPath(path: string, to: Environment): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] !== 'sandbox' && parts[0] !== 'live') return `/${to}`;
  const section = parts[1] ?? '';
  if (section === 'consumers' && to === 'live') return '/live/consumers';
  if (section === 'settings') return `/${to}/${parts.slice(1).join('/')}`;
  return section ? `/${to}/${section}` : `/${to}`;
}
