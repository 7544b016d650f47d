import { TERMS_VERSION } from '../merchants/onboarding.service';
import { TERMS } from './terms';

it('publishes the terms version that onboarding records as accepted', () => {
  expect(TERMS[TERMS_VERSION]).toBeDefined();
});
