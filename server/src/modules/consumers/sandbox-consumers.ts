/**
 * The three consumers seeded into every sandbox (interface.md, Sandbox). Each tenant gets them
 * under its own fresh UUIDs; their identities are fixed fixtures so lenders' tests can rely on them.
 * `sandbox_profile` tells the sandbox credit-data connector and the tier logic who they are.
 */
export interface SandboxConsumerFixture {
  profile: 'soft' | 'enhanced' | 'hard';
  firstName: string;
  lastName: string;
  email: string;
  phone: string;
  dob: string;
  address: { line1: string; city: string; state: string; zip: string };
  ssnLast4: string;
  linkedAccounts: Array<{ type: string; institution: string; mask: string }>;
}

export const SANDBOX_CONSUMERS: readonly SandboxConsumerFixture[] = [
  {
    profile: 'soft',
    firstName: 'Riley',
    lastName: 'Returning',
    email: 'riley.returning@sandbox.example.com',
    phone: '+14155550101',
    dob: '1988-03-14',
    address: { line1: '100 Market Street', city: 'San Francisco', state: 'CA', zip: '94105' },
    ssnLast4: '4821',
    linkedAccounts: [{ type: 'checking', institution: 'Sandbox Federal Bank', mask: '6789' }],
  },
  {
    profile: 'enhanced',
    firstName: 'Emery',
    lastName: 'Enhanced',
    email: 'emery.enhanced@sandbox.example.com',
    phone: '+12125550102',
    dob: '1979-11-02',
    address: { line1: '200 Broadway', city: 'New York', state: 'NY', zip: '10007' },
    ssnLast4: '5932',
    linkedAccounts: [{ type: 'checking', institution: 'Sandbox Federal Bank', mask: '4410' }],
  },
  {
    profile: 'hard',
    firstName: 'Harper',
    lastName: 'Hardcase',
    email: 'harper.hardcase@sandbox.example.com',
    phone: '+13125550103',
    dob: '1970-06-30',
    address: { line1: '300 Wacker Drive', city: 'Chicago', state: 'IL', zip: '60606' },
    ssnLast4: '7043',
    linkedAccounts: [
      { type: 'checking', institution: 'Sandbox Federal Bank', mask: '1207' },
      { type: 'savings', institution: 'Sandbox Federal Bank', mask: '3381' },
    ],
  },
];
