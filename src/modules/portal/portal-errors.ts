/** The portal's own refusals; PortalErrorFilter turns each into its page. */

/** No live session: the portal's filter answers with a redirect to the sign-in page. */
export class SignInRequired extends Error {
  constructor() {
    super('sign-in required');
  }
}

/** A POST whose form token does not match the session's: 403, nothing done. */
export class CsrfRejected extends Error {
  constructor() {
    super('CSRF token missing or wrong');
  }
}

/** A member on an admin's page (user management): 403 in words, nothing done. */
export class AdminRequired extends Error {
  constructor() {
    super('admin role required');
  }
}
