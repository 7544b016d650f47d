import { isOneEmailAddress } from './email-address';

describe('isOneEmailAddress', () => {
  it.each([
    ['payer@example.com', true],
    ['a.b+tag@mail.example.co.uk', true],
    ['ü@example.com', true],
    ['a@example.com, b@example.com', false],
    ['a@example.com;b@example.com', false],
    ['a@example.com\r\nBcc: b@example.com', false],
    ['Payer <a@example.com>', false],
    ['"a,b"@example.com', false],
    ['"a\r\nBcc: b@example.com"@example.com', false],
    ['grp: a@example.com, b@example.com;', false],
    ['a@example.com ', false],
    ['not an email', false],
    ['a@localhost', false],
  ])('%j → %s', (s, expected) => {
    expect(isOneEmailAddress(s)).toBe(expected);
  });
});
