// A real OpenID Connect provider (panva/oidc-provider, certified) for the sign-in tests.
// Listens on 127.0.0.1 only; prints "READY <port>" once it serves. Every account id exists:
// the built-in login page (devInteractions) takes any login and ignores the password, and
// the account's e-mail is the login itself (or <login>@example.org).
//
// Environment: OIDC_PORT (0: any free port), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET,
// OIDC_REDIRECT_URI (the app's http://localhost:<port>/oauth2callback),
// OIDC_ID_TOKEN_TTL (seconds, default 3600), OIDC_ACCOUNTS (JSON: login -> claims that
// replace the defaults for that account, e.g. an e-mail the provider did not verify; null
// leaves the claim out).
import http from 'node:http';
import Provider from 'oidc-provider';

const env = process.env;
const redirectUri = env.OIDC_REDIRECT_URI || 'http://localhost:8501/oauth2callback';
const idTokenTtl = Number(env.OIDC_ID_TOKEN_TTL || 3600);
const accounts = JSON.parse(env.OIDC_ACCOUNTS || '{}');

function claimsFor(id) {
  const email = id.includes('@') ? id.toLowerCase() : `${id.toLowerCase()}@example.org`;
  const local = email.split('@')[0];
  const name = local.split(/[._-]/).filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1)).join(' ');
  const claims = { email, email_verified: true, name, ...(accounts[id] || {}), sub: id };
  // null in OIDC_ACCOUNTS: the provider does not send that claim at all.
  for (const key of Object.keys(claims)) if (claims[key] === null) delete claims[key];
  return claims;
}

const configuration = {
  clients: [{
    client_id: env.OIDC_CLIENT_ID || 'rubric-workbench',
    client_secret: env.OIDC_CLIENT_SECRET || 'test-secret',
    redirect_uris: [redirectUri],
    // st.logout() returns to the app through the same callback URL.
    post_logout_redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Authlib builds st.user from the ID token only: put the scopes' claims in it.
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  async findAccount(ctx, id) {
    return { accountId: id, claims: async () => claimsFor(id) };
  },
  // Skip the consent page: the test client gets openid email profile.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
  ttl: { IdToken: idTokenTtl },
  cookies: { keys: ['rubric-workbench-tests-only'] },
};

const server = http.createServer();
server.listen(Number(env.OIDC_PORT || 0), '127.0.0.1', () => {
  const { port } = server.address();
  const provider = new Provider(`http://127.0.0.1:${port}`, configuration);
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  console.log(`READY ${port}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
