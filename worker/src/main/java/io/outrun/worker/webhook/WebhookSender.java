package io.outrun.worker.webhook;

import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.WebhookStore;
import io.outrun.core.webhook.WebhookSignature;
import io.outrun.core.webhook.WebhookUrl;
import io.outrun.model.egress.EgressPolicy;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker node's sender of completion webhooks: takes due deliveries (woken by the end's NOTIFY,
 * else when the next retry is due, else at a slow fallback look), signs each with its owner's
 * secret and POSTs it to the address the operator's list approves at that moment. A 2xx delivers
 * it; anything else is tried again after 5 s, doubling up to 10 minutes, until 24 hours after the
 * end, when it is marked {@code failed}. Every node sends: whichever takes a row first; a node
 * killed mid-send leaves the row to be taken again once its hold runs out.
 */
public final class WebhookSender implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(WebhookSender.class);

    /** An attempt's bound: connect, send, and the receiver's status line. */
    public static final Duration ATTEMPT_TIMEOUT = Duration.ofSeconds(10);
    /**
     * How long a taken row is this node's: past it (the node died mid-send) another node takes it.
     * The attempt's bound, plus the name's lookup (the resolver's own timeouts), with room.
     */
    static final Duration HOLD = Duration.ofSeconds(60);
    static final Duration FIRST_RETRY = Duration.ofSeconds(5);
    static final Duration MAX_RETRY = Duration.ofMinutes(10);
    /** After this long past the end, a webhook no receiver took is {@code failed}. */
    public static final Duration WINDOW = Duration.ofHours(24);
    private static final Duration FALLBACK_LOOK = Duration.ofSeconds(30);
    private static final int SENDERS = 4;

    private final WebhookStore store;
    private final SecretsKey key;
    private final EgressPolicy allowed;
    private final String node;
    private final ExecutorService senders;
    private final Semaphore free = new Semaphore(SENDERS);
    /** Owners this node sends to now: a take skips them, so one owner's hanging receivers hold one sender. */
    private final Set<String> busy = ConcurrentHashMap.newKeySet();
    private final Object signal = new Object();
    private final Thread loop;
    private volatile boolean running = true;
    private boolean woken;

    public WebhookSender(WebhookStore store, SecretsKey key, EgressPolicy allowed, String node) {
        this.store = store;
        this.key = key;
        this.allowed = allowed;
        this.node = node;
        this.senders = Executors.newFixedThreadPool(SENDERS, r -> {
            Thread t = new Thread(r, "outrun-webhook-send");
            t.setDaemon(true);
            return t;
        });
        this.loop = new Thread(this::loop, "outrun-webhooks");
        this.loop.setDaemon(true);
    }

    public WebhookSender start() {
        loop.start();
        return this;
    }

    /** An end with a webhook was written (the NOTIFY), or a sender freed: look now. */
    public void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    /** The wait before retry {@code attempt} + 1: 5 s doubling, at most 10 minutes. */
    static Duration retryAfter(int attempt) {
        int doublings = Math.min(Math.max(attempt - 1, 0), 16);
        Duration d = FIRST_RETRY.multipliedBy(1L << doublings);
        return d.compareTo(MAX_RETRY) > 0 ? MAX_RETRY : d;
    }

    private void loop() {
        while (running) {
            long waitMs = FALLBACK_LOOK.toMillis();
            try {
                int n = free.availablePermits();
                if (n > 0) {
                    WebhookStore.Taken taken = store.take(n, HOLD, Set.copyOf(busy), WINDOW);
                    for (WebhookStore.Due due : taken.due()) {
                        free.acquireUninterruptibly();
                        busy.add(due.owner());
                        senders.execute(() -> {
                            try {
                                deliver(due);
                            } finally {
                                busy.remove(due.owner());
                                free.release();
                                wake();
                            }
                        });
                    }
                    if (taken.more() && !taken.due().isEmpty()) {
                        continue; // more were due: look again (a free sender, another owner)
                    }
                    if (taken.nextDueMs() != null) {
                        waitMs = Math.max(1, Math.min(waitMs, taken.nextDueMs()));
                    }
                }
            } catch (RuntimeException e) {
                LOG.warn("cannot take due webhooks ({}); looking again in 5 s", e.getMessage());
                waitMs = 5_000;
            }
            synchronized (signal) {
                long until = System.currentTimeMillis() + waitMs;
                while (running && !woken && System.currentTimeMillis() < until) {
                    try {
                        signal.wait(Math.max(1, until - System.currentTimeMillis()));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                woken = false;
            }
        }
    }

    /** One attempt, and its outcome written back under its attempt number. */
    void deliver(WebhookStore.Due d) {
        Integer status = null;
        String error;
        try {
            error = attempt(d);
            if (error == null) {
                return;
            }
        } catch (HttpStatus s) {
            status = s.status;
            error = "the receiver answered HTTP " + s.status + " (a 2xx delivers it)";
        } catch (IOException | RuntimeException e) {
            error = "no answer: " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        }
        Duration again = retryAfter(d.attempt());
        try {
            Optional<String> state = store.failedAttempt(d.executionId(), d.attempt(), status, cut(error), again, WINDOW);
            if (state.isPresent() && state.get().equals("failed")) {
                LOG.warn("webhook {} of execution {} failed for good after {} attempts: {}", d.eventId(), d.executionId(),
                        d.attempt(), error);
            } else if (state.isPresent()) {
                LOG.info("webhook {} of execution {}: attempt {} failed ({}); again in {} s", d.eventId(), d.executionId(),
                        d.attempt(), error, again.toSeconds());
            }
        } catch (RuntimeException e) {
            LOG.warn("cannot record attempt {} of webhook {} ({}); it is taken again once its hold runs out", d.attempt(),
                    d.eventId(), e.getMessage());
        }
    }

    /** Null once delivered; else why this attempt could not be made. */
    private String attempt(WebhookStore.Due d) throws IOException, HttpStatus {
        if (d.secret() == null) {
            return "the owner has no webhook secret to sign with (POST /v1/webhook-secret)";
        }
        if (key == null) {
            return "node " + node + " has no --secrets-key-file to open the owner's webhook secret";
        }
        Optional<String> secret = key.open(d.owner(), WebhookStore.SECRET_NAME,
                new SecretsKey.Sealed(d.secret().nonce(), d.secret().ciphertext(), d.secret().keyId()));
        if (secret.isEmpty()) {
            return "node " + node + " cannot open the owner's webhook secret (sealed under key " + d.secret().keyId()
                    + ", this node's is " + key.id() + ")";
        }
        WebhookUrl url = WebhookUrl.parse(d.url());
        EgressPolicy.Decision decision = allowed.decide(url.host(), url.port());
        if (!decision.allowed()) {
            return decision.refusal();
        }
        byte[] body = WebhookEvent.body(d);
        long timestamp = System.currentTimeMillis() / 1000;
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("webhook-id", d.eventId());
        headers.put("webhook-timestamp", Long.toString(timestamp));
        String signature = WebhookSignature.sign(secret.get(), d.eventId(), timestamp, body);
        if (d.previous() != null) {
            // Rotated within the window: the previous secret signs too (Standard Webhooks: space-separated).
            Optional<String> previous = key.open(d.owner(), WebhookStore.SECRET_NAME,
                    new SecretsKey.Sealed(d.previous().nonce(), d.previous().ciphertext(), d.previous().keyId()));
            if (previous.isPresent()) {
                signature += " " + WebhookSignature.sign(previous.get(), d.eventId(), timestamp, body);
            }
        }
        headers.put("webhook-signature", signature);
        int status = WebhookPost.send(url, decision.target().address(), headers, body, ATTEMPT_TIMEOUT);
        if (status < 200 || status > 299) {
            throw new HttpStatus(status);
        }
        if (!store.delivered(d.executionId(), d.attempt(), status)) {
            LOG.info("webhook {} of execution {} was delivered by attempt {}, but another node had taken it since",
                    d.eventId(), d.executionId(), d.attempt());
        }
        return null;
    }

    private static String cut(String s) {
        return s.length() <= 500 ? s : s.substring(0, 500) + "…";
    }

    /** A receiver's answer that is not 2xx. */
    private static final class HttpStatus extends Exception {
        final int status;

        HttpStatus(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    @Override
    public void close() {
        running = false;
        wake();
        loop.interrupt();
        senders.shutdownNow();
        try {
            senders.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
