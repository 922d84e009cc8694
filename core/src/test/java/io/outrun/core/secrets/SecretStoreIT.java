package io.outrun.core.secrets;

import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Sealing and opening against PostgreSQL: what a worker says when it cannot give a run its secrets. */
class SecretStoreIT {

    @Test
    void aSecretOpensOnlyForItsOwnerAndNameUnderTheKeyThatSealedIt() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        SecretsKey key = SecretsKey.fromBase64(SecretsKey.generate(), "test");
        SecretsKey other = SecretsKey.fromBase64(SecretsKey.generate(), "test");
        try (Core core = Core.open(db, "api")) {
            SecretStore store = new SecretStore(core.pool(), key);
            assertThat(store.put("alice", "TOKEN", "value-one").outcome()).isEqualTo(SecretStore.Outcome.CREATED);
            assertThat(store.put("alice", "TOKEN", "value-two").outcome()).isEqualTo(SecretStore.Outcome.UPDATED);
            assertThat(store.put("alice", "OTHER", "value-three").outcome()).isEqualTo(SecretStore.Outcome.CREATED);
            assertThat(store.open("alice", List.of("TOKEN", "OTHER"))).isEqualTo(Map.of("TOKEN", "value-two", "OTHER", "value-three"));
            assertThat(store.missing("alice", List.of("OTHER", "NOPE", "TOKEN", "ALSO_NOPE"))).containsExactly("NOPE", "ALSO_NOPE");
            assertThat(store.missing("bob", List.of("TOKEN"))).containsExactly("TOKEN");

            assertThatThrownBy(() -> new SecretStore(core.pool(), other).open("alice", List.of("TOKEN")))
                    .isInstanceOf(SecretUnavailableException.class)
                    .hasMessageContaining("sealed with another key (" + key.id() + ") than this worker's (" + other.id() + ")")
                    .hasMessageNotContaining("value-two");
            assertThatThrownBy(() -> new SecretStore(core.pool(), null).open("alice", List.of("TOKEN")))
                    .isInstanceOf(SecretUnavailableException.class).hasMessageContaining("--secrets-key-file");
            assertThatThrownBy(() -> store.open("alice", List.of("GONE")))
                    .isInstanceOf(SecretUnavailableException.class).hasMessageContaining("secret GONE the execution names no longer exists");

            // A sealed value copied to another owner's row does not open there: the owner is sealed in.
            rows.update("INSERT INTO secrets (owner, name, nonce, ciphertext, key_id)"
                    + " SELECT 'bob', name, nonce, ciphertext, key_id FROM secrets WHERE owner = 'alice' AND name = 'TOKEN'");
            assertThatThrownBy(() -> store.open("bob", List.of("TOKEN"))).isInstanceOf(SecretUnavailableException.class)
                    .hasMessageContaining("does not open under this worker's key");
            assertThat(store.check("alice", List.of("TOKEN", "OTHER", "NOPE"))).isEqualTo(
                    new SecretStore.Check(List.of("NOPE"), "value-two".length() + "value-three".length()));

            assertThat(store.delete("alice", "TOKEN")).isTrue();
            assertThat(store.delete("alice", "TOKEN")).isFalse();
            assertThat(store.list("alice")).extracting(SecretStore.Listed::name).containsExactly("OTHER");
            assertThat(rows.single("SELECT count(*) FROM secrets WHERE position(convert_to('value', 'UTF8') IN ciphertext) > 0"))
                    .isZero();
        }
    }

    @Test
    void anOwnerKeepsABoundedNumberOfSecrets() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        SecretsKey key = SecretsKey.fromBase64(SecretsKey.generate(), "test");
        try (Core core = Core.open(db, "api")) {
            SecretStore store = new SecretStore(core.pool(), key);
            for (int i = 0; i < SecretName.MAX_PER_OWNER; i++) {
                assertThat(store.put("alice", "S" + i, "value").outcome()).isEqualTo(SecretStore.Outcome.CREATED);
            }
            assertThat(store.put("alice", "ONE_MORE", "value").outcome()).isEqualTo(SecretStore.Outcome.TOO_MANY);
            assertThat(store.put("alice", "S7", "new value").outcome()).isEqualTo(SecretStore.Outcome.UPDATED);
            assertThat(store.put("bob", "S1", "value").outcome()).isEqualTo(SecretStore.Outcome.CREATED);
        }
    }

    @Test
    void aKeyMustBe32BytesOfBase64() {
        assertThatThrownBy(() -> SecretsKey.fromBase64("not base64!", "env OUTRUN_SECRETS_KEY"))
                .hasMessageContaining("env OUTRUN_SECRETS_KEY must hold a base64 key of 32 bytes");
        assertThatThrownBy(() -> SecretsKey.fromBase64("c2hvcnQ=", "x")).hasMessageContaining("got 5 bytes");
        String text = SecretsKey.generate();
        assertThat(SecretsKey.fromBase64(text, "x").toString()).doesNotContain(text).startsWith("SecretsKey[id=");
    }
}
