-- Accounts an attacker cannot bend (issue 29), hand-written (README "Schema"); each
-- statement applies to a database that already has rows.

-- Sign-in throttling per account and client (src/features/accounts/signin-throttle.ts):
-- the email a row counts for, so that a completed password reset clears every count of
-- its account (the account's ceiling and each of its clients'). Rows of the old keys
-- (`account:<email>`) are the ceiling's; `client:<address>` rows have none.
ALTER TABLE `signin_throttle` ADD `account` text;
--> statement-breakpoint
UPDATE `signin_throttle` SET `account` = substr(`key`, 9) WHERE `key` LIKE 'account:%';
--> statement-breakpoint
CREATE INDEX `signin_throttle_account` ON `signin_throttle` (`account`) WHERE "signin_throttle"."account" IS NOT NULL;
--> statement-breakpoint
-- What a person sees of each of their sessions (GET /console/v1/me/sessions): the
-- browser and the address that signed in. Sessions made before read as unknown.
ALTER TABLE `console_sessions` ADD `user_agent` text;
--> statement-breakpoint
ALTER TABLE `console_sessions` ADD `client_address` text;
--> statement-breakpoint
-- An API key's own name, apart from its owner: `owner` is who made it (a console key:
-- its creator's email), `name` what they called it. Console keys were labelled
-- '<email> (<name>)' in `owner`; that label is split here (a key with no name stays
-- as it is). What the key does is recorded as its owner with the name beside it
-- (src/middleware/auth.ts keyActorLabel).
ALTER TABLE `api_keys` ADD `name` text;
--> statement-breakpoint
UPDATE `api_keys`
SET `name` = substr(`owner`, length((SELECT `email` FROM `users` WHERE `id` = `api_keys`.`user_id`)) + 3,
                    length(`owner`) - length((SELECT `email` FROM `users` WHERE `id` = `api_keys`.`user_id`)) - 3),
    `owner` = (SELECT `email` FROM `users` WHERE `id` = `api_keys`.`user_id`)
WHERE `user_id` IS NOT NULL
  AND substr(`owner`, 1, length((SELECT `email` FROM `users` WHERE `id` = `api_keys`.`user_id`)) + 2)
      = (SELECT `email` FROM `users` WHERE `id` = `api_keys`.`user_id`) || ' ('
  AND substr(`owner`, -1) = ')';
