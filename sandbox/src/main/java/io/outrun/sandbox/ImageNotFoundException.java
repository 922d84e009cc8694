package io.outrun.sandbox;

/** The image a run asked for does not exist on this node's engine. */
public class ImageNotFoundException extends SandboxUnavailableException {
    private final String image;

    public ImageNotFoundException(String image, String message, Throwable cause) {
        super(message, cause);
        this.image = image;
    }

    public String image() {
        return image;
    }
}
