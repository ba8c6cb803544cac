/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/examples'],
  testMatch: ['**/test/**/*.test.ts', '**/examples/**/*.test.js'],
  // The VM suite runs inside QEMU through `npm run test:rxe`.
  testPathIgnorePatterns: ['/node_modules/', '/test/rxe/'],
  transform: { '^.+\\.tsx?$': '@swc/jest' },
  // Fixtures, the CLI and the rxe guest load dist/: rebuilt here when src/ changed.
  globalSetup: '<rootDir>/test/support/global-setup.js',
  // Examples import the package by name, as users do.
  moduleNameMapper: {
    '^rx-verbs$': '<rootDir>/src/index.ts',
    '^rx-verbs/testing$': '<rootDir>/src/testing/index.ts',
  },
  testTimeout: 30000,
};
